"""Serving over TLS and authentication, over real HTTPS: client certificates, static
tokens, ServiceAccount tokens, anonymous requests, impersonation, SelfSubjectReview, and
kube's 401/403 bodies."""

from __future__ import annotations

import datetime
import ssl
import stat
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest

from kubewerk.apiserver.auth.certs import ServerPki
from kubewerk.apiserver.auth.types import Attributes, Decision, UserInfo
from kubewerk.apiserver.server import EmbeddedServer, SecurityConfigError
from kubewerk.core.pki import KeyPair, issue, new_ca

SSR = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
SSR_BODY = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
UNAUTHORIZED = {
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Failure",
    "message": "Unauthorized",
    "reason": "Unauthorized",
    "code": 401,
}


def client_context(
    server: EmbeddedServer, cert: KeyPair | None = None, tmp: Path | None = None
) -> ssl.SSLContext:
    """An SSL context trusting ``server``'s CA, presenting ``cert`` when given."""
    assert server.pki is not None
    context = ssl.create_default_context(cadata=server.pki.ca_pem.decode())
    if cert is not None:
        assert tmp is not None
        (tmp / "c.crt").write_bytes(cert.cert)
        (tmp / "c.key").write_bytes(cert.key)
        context.load_cert_chain(str(tmp / "c.crt"), str(tmp / "c.key"))
    return context


async def call(
    server: EmbeddedServer,
    method: str,
    path: str,
    body: Any = None,
    *,
    ssl_context: ssl.SSLContext | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, Any]:
    context = ssl_context
    if context is None and server.tls:
        context = client_context(server)
    async with (
        aiohttp.ClientSession() as session,
        session.request(
            method,
            server.url + path,
            data=orjson.dumps(body) if body is not None else None,
            headers={"Content-Type": "application/json", **(headers or {})},
            ssl=context if server.tls else False,
        ) as resp,
    ):
        raw = await resp.read()
        return resp.status, orjson.loads(raw) if raw else None


async def whoami(server: EmbeddedServer, **kw: Any) -> Any:
    status, body = await call(server, "POST", SSR, SSR_BODY, **kw)
    assert status == 201, body
    return body["status"]["userInfo"]


@pytest.fixture
async def tls_server(tmp_path: Path) -> AsyncIterator[EmbeddedServer]:
    tokens = tmp_path / "tokens.csv"
    tokens.write_text('secret-alice,alice,uid-a,"dev,ops"\nsecret-bob,bob,uid-b\n')
    async with EmbeddedServer(tls=True, token_auth_file=tokens, pki_dir=tmp_path / "pki") as s:
        yield s


async def test_admin_client_certificate_is_system_masters(
    tls_server: EmbeddedServer, tmp_path: Path
) -> None:
    assert tls_server.url.startswith("https://")
    assert tls_server.pki is not None and tls_server.pki.admin is not None
    context = client_context(tls_server, tls_server.pki.admin, tmp_path)
    user = await whoami(tls_server, ssl_context=context)
    assert user == {
        "username": "kubewerk-admin",
        "groups": ["system:masters", "system:authenticated"],
    }
    status, body = await call(tls_server, "GET", "/api/v1/namespaces", ssl_context=context)
    assert status == 200 and body["kind"] == "NamespaceList"


async def test_no_credentials_is_kubes_401(tls_server: EmbeddedServer) -> None:
    for path in ("/api/v1/namespaces", "/version", "/healthz", SSR):
        status, body = await call(tls_server, "GET", path)
        assert (status, body) == (401, UNAUTHORIZED), path


async def test_static_tokens(tls_server: EmbeddedServer) -> None:
    user = await whoami(tls_server, headers={"Authorization": "Bearer secret-alice"})
    assert user == {
        "username": "alice",
        "uid": "uid-a",
        "groups": ["dev", "ops", "system:authenticated"],
    }
    # the scheme is case-insensitive, as kube reads it
    user = await whoami(tls_server, headers={"Authorization": "bearer secret-bob"})
    assert user == {"username": "bob", "uid": "uid-b", "groups": ["system:authenticated"]}
    status, body = await call(
        tls_server, "GET", "/api/v1/namespaces", headers={"Authorization": "Bearer wrong"}
    )
    assert (status, body) == (401, UNAUTHORIZED)


async def test_pki_is_private_and_reused_on_restart(tmp_path: Path) -> None:
    store = f"sqlite:{tmp_path / 'store.db'}"
    async with EmbeddedServer(store, tls=True) as first:
        assert first.pki is not None and first.pki.directory == tmp_path / "store.db.pki"
        ca, serving = first.pki.ca_pem, first.pki.cert_file.read_bytes()
    directory = tmp_path / "store.db.pki"
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    for path in directory.iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    async with EmbeddedServer(store, tls=True) as second:
        assert second.pki is not None
        assert second.pki.ca_pem == ca and second.pki.cert_file.read_bytes() == serving
        assert second.pki.admin is not None
        admin = client_context(second, second.pki.admin, tmp_path)
        assert (await whoami(second, ssl_context=admin))["username"] == "kubewerk-admin"


async def test_memory_store_pki_lives_in_a_private_temp_dir_removed_on_stop() -> None:
    server = EmbeddedServer(tls=True)
    assert server.pki is not None and server.pki.directory is not None
    directory = server.pki.directory
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    async with server:
        pass
    assert not directory.exists()


async def test_wrong_ca_plain_http_and_foreign_client_certificates_fail_clearly(
    tls_server: EmbeddedServer, tmp_path: Path
) -> None:
    other = new_ca("someone else")
    wrong = ssl.create_default_context(cadata=other.cert.decode())
    with pytest.raises(aiohttp.ClientConnectorCertificateError):
        await call(tls_server, "GET", "/version", ssl_context=wrong)
    # plain HTTP to the TLS port: the server answers no HTTP
    plain = tls_server.url.replace("https://", "http://")
    async with aiohttp.ClientSession() as session:
        with pytest.raises(aiohttp.ClientError):
            async with session.get(plain + "/version") as resp:
                await resp.read()
    # a client certificate from another CA, or an expired one, fails the handshake
    foreign = issue(other, "mallory", organizations=["system:masters"], client=True)
    pki = tls_server.pki
    assert pki is not None and pki.ca is not None
    expired = issue(
        pki.ca,
        "old",
        client=True,
        days=1,
        not_before=datetime.datetime.now(datetime.UTC) - datetime.timedelta(days=3),
    )
    for cert in (foreign, expired):
        with pytest.raises(aiohttp.ClientError):
            await call(
                tls_server,
                "GET",
                "/version",
                ssl_context=client_context(tls_server, cert, tmp_path),
            )


async def test_client_certificate_groups_and_client_ca_file(tmp_path: Path) -> None:
    other = new_ca("corp CA")
    (tmp_path / "corp.crt").write_bytes(other.cert)
    async with EmbeddedServer(tls=True, client_ca_file=tmp_path / "corp.crt") as server:
        corp = issue(other, "carol", organizations=["eng", "sre"], client=True)
        user = await whoami(server, ssl_context=client_context(server, corp, tmp_path))
        assert user == {"username": "carol", "groups": ["eng", "sre", "system:authenticated"]}


async def test_anonymous_requests_only_when_enabled_and_bad_tokens_still_fail(
    tmp_path: Path,
) -> None:
    async with EmbeddedServer(tls=True, anonymous_auth=True) as server:
        assert await whoami(server) == {
            "username": "system:anonymous",
            "groups": ["system:unauthenticated"],
        }
        # a non-bearer Authorization header carries no credentials
        assert (await whoami(server, headers={"Authorization": "Basic eDp5"}))["username"] == (
            "system:anonymous"
        )
        status, body = await call(
            server, "GET", "/version", headers={"Authorization": "Bearer nope"}
        )
        assert (status, body) == (401, UNAUTHORIZED)


async def test_security_off_whoami_is_the_insecure_port_user() -> None:
    async with EmbeddedServer() as server:
        assert await whoami(server) == {
            "username": "system:unsecured",
            "groups": ["system:masters", "system:authenticated"],
        }
        # impersonation is allowed (everything is) and reported
        user = await whoami(server, headers={"Impersonate-User": "jane", "Impersonate-Group": "qa"})
        assert user == {"username": "jane", "groups": ["qa", "system:authenticated"]}


async def test_service_account_tokens(tls_server: EmbeddedServer, tmp_path: Path) -> None:
    pki = tls_server.pki
    assert pki is not None and pki.admin is not None
    admin = client_context(tls_server, pki.admin, tmp_path)
    status, sa = await call(
        tls_server,
        "POST",
        "/api/v1/namespaces/default/serviceaccounts",
        {"metadata": {"name": "robot"}},
        ssl_context=admin,
    )
    assert status == 201, sa
    path = "/api/v1/namespaces/default/serviceaccounts/robot/token"
    status, tr = await call(tls_server, "POST", path, {"spec": {}}, ssl_context=admin)
    assert status == 201, tr
    assert tr["kind"] == "TokenRequest" and tr["spec"]["expirationSeconds"] == 3600
    assert tr["spec"]["audiences"] == ["https://kubernetes.default.svc.cluster.local"]
    token = tr["status"]["token"]
    user = await whoami(tls_server, headers={"Authorization": f"Bearer {token}"})
    assert user["username"] == "system:serviceaccount:default:robot"
    assert user["uid"] == sa["metadata"]["uid"]
    assert user["groups"] == [
        "system:serviceaccounts",
        "system:serviceaccounts:default",
        "system:authenticated",
    ]
    assert user["extra"]["authentication.kubernetes.io/credential-id"][0].startswith("JTI=")

    # a token for another audience is not accepted by the API
    status, other = await call(
        tls_server, "POST", path, {"spec": {"audiences": ["vault"]}}, ssl_context=admin
    )
    assert status == 201
    bad = {"Authorization": f"Bearer {other['status']['token']}"}
    assert await call(tls_server, "GET", "/version", headers=bad) == (401, UNAUTHORIZED)

    # expired: the same key, a clock past exp + leeway
    tokens = tls_server.app.service_accounts
    real_clock = tokens.clock
    tokens.clock = lambda: real_clock() + 3600 + 61
    try:
        assert tokens.authenticate(token) is None
    finally:
        tokens.clock = real_clock
    assert tokens.authenticate(token) is not None

    # a tampered token (payload changed, signature kept) is refused
    head, payload, sig = token.split(".")
    assert tokens.authenticate(f"{head}.{payload[:-2]}AA.{sig}") is None

    # too short an expiry is kube's 422
    status, body = await call(
        tls_server, "POST", path, {"spec": {"expirationSeconds": 10}}, ssl_context=admin
    )
    assert status == 422
    assert body["message"] == (  # TokenREST reports ValidateTokenRequest for the name ""
        'TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: '
        "Invalid value: 10: may not specify a duration less than 10 minutes"
    )
    status, body = await call(
        tls_server,
        "POST",
        "/api/v1/namespaces/default/serviceaccounts/ghost/token",
        {"spec": {}},
        ssl_context=admin,
    )
    assert (status, body["message"]) == (404, 'serviceaccounts "ghost" not found')

    # deleting the ServiceAccount kills its tokens
    status, _ = await call(
        tls_server, "DELETE", "/api/v1/namespaces/default/serviceaccounts/robot", ssl_context=admin
    )
    assert status == 200
    assert await call(
        tls_server, "GET", "/version", headers={"Authorization": f"Bearer {token}"}
    ) == (401, UNAUTHORIZED)


class TableAuthorizer:
    """Allows what ``allowed`` lists as (user, verb, resource) triples; denies with a reason."""

    def __init__(self, allowed: set[tuple[str, str, str]]) -> None:
        self.allowed = allowed
        self.seen: list[Attributes] = []

    def authorize(self, attrs: Attributes) -> Decision:
        self.seen.append(attrs)
        key = (attrs.user.name, attrs.verb, attrs.resource or attrs.path)
        return Decision(True) if key in self.allowed else Decision(False, "")

    def rules_for(self, user: UserInfo, namespace: str) -> tuple[list[Any], list[Any], bool]:
        return [], [], False


async def test_authorization_and_impersonation_with_kubes_403s(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.csv"
    tokens.write_text("t-alice,alice,1\n")
    authz = TableAuthorizer(
        {
            ("alice", "list", "configmaps"),
            ("alice", "create", "selfsubjectreviews"),
            ("alice", "impersonate", "users"),
            ("bob", "create", "selfsubjectreviews"),
        }
    )
    alice = {"Authorization": "Bearer t-alice"}
    async with EmbeddedServer(token_auth_file=tokens, authorizer=authz) as server:
        assert not server.tls
        status, _ = await call(server, "GET", "/api/v1/namespaces/a/configmaps", headers=alice)
        assert status == 200
        listed = authz.seen[-1]
        assert (listed.verb, listed.namespace, listed.resource, listed.api_version) == (
            "list",
            "a",
            "configmaps",
            "v1",
        )
        status, body = await call(
            server, "GET", "/apis/apps/v1/namespaces/a/deployments/web", headers=alice
        )
        assert status == 403
        assert body["message"] == (
            'deployments.apps "web" is forbidden: User "alice" cannot get resource '
            '"deployments" in API group "apps" in the namespace "a"'
        )
        assert body["details"] == {"name": "web", "group": "apps", "kind": "deployments"}
        status, body = await call(server, "GET", "/api/v1/nodes?watch=true", headers=alice)
        assert status == 403
        assert body["message"] == (
            'nodes is forbidden: User "alice" cannot watch resource "nodes" in API group "" '
            "at the cluster scope"
        )
        status, body = await call(server, "GET", "/version", headers=alice)
        assert (status, body["message"]) == (
            403,
            'forbidden: User "alice" cannot get path "/version"',
        )
        # impersonating bob is allowed, his groups are not
        user = await whoami(server, headers={**alice, "Impersonate-User": "bob"})
        assert user == {"username": "bob", "groups": ["system:authenticated"]}
        status, body = await call(
            server,
            "POST",
            SSR,
            SSR_BODY,
            headers={**alice, "Impersonate-User": "bob", "Impersonate-Group": "admins"},
        )
        assert status == 403
        assert body["message"] == (
            'groups "admins" is forbidden: User "alice" cannot impersonate resource "groups" '
            'in API group "" at the cluster scope'
        )
        status, body = await call(
            server,
            "POST",
            SSR,
            SSR_BODY,
            headers={**alice, "Impersonate-User": "system:serviceaccount:ns:robot"},
        )
        assert status == 403
        assert body["message"] == (
            'serviceaccounts "robot" is forbidden: User "alice" cannot impersonate resource '
            '"serviceaccounts" in API group "" in the namespace "ns"'
        )
        status, body = await call(
            server, "POST", SSR, SSR_BODY, headers={**alice, "Impersonate-Group": "x"}
        )
        assert status == 500 and "without impersonating a user" in body["message"]


async def test_fuzzed_credentials_are_all_401(tls_server: EmbeddedServer, tmp_path: Path) -> None:
    import random

    rng = random.Random(15)
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEF0123456789-_.=+/ \t"
    values = [
        "Bearer " + "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 200)))
        for _ in range(40)
    ]
    values += [
        "Bearer a.b.c",
        "Bearer ..",
        "Bearer eyJhbGciOiJub25lIn0.eyJpc3MiOiJ4In0.",
        "Bearer " + "A" * 100_000,
        "Bearer \u00e9t\u00e9".encode().decode("latin-1"),
    ]
    for value in values:
        status, body = await call(
            tls_server, "GET", "/api/v1/namespaces", headers={"Authorization": value}
        )
        assert (status, body) == (401, UNAUTHORIZED), value[:40]
    # a truncated client certificate cannot even be loaded by the client: nothing reaches us
    pki = tls_server.pki
    assert pki is not None and pki.admin is not None
    truncated = KeyPair(pki.admin.cert[: len(pki.admin.cert) // 2], pki.admin.key)
    with pytest.raises(ssl.SSLError):
        client_context(tls_server, truncated, tmp_path)
    # a server still serving after all that
    status, _ = await call(
        tls_server, "GET", "/version", headers={"Authorization": "Bearer secret-bob"}
    )
    assert status == 200


def test_bad_security_arguments_are_refused_before_anything_opens(tmp_path: Path) -> None:
    (tmp_path / "short.csv").write_text("tok,user\n")
    with pytest.raises(SecurityConfigError, match="must have at least 3 columns"):
        EmbeddedServer(token_auth_file=tmp_path / "short.csv")
    with pytest.raises(SecurityConfigError, match="cannot read"):
        EmbeddedServer(token_auth_file=tmp_path / "missing.csv")
    (tmp_path / "ca.crt").write_text("not a certificate")
    with pytest.raises(SecurityConfigError, match="holds no PEM certificate"):
        EmbeddedServer(client_ca_file=tmp_path / "ca.crt")
    with pytest.raises(SecurityConfigError, match="given together"):
        EmbeddedServer(tls_cert_file=tmp_path / "x.crt")
    pki = ServerPki.ensure(tmp_path / "pki")
    with pytest.raises(SecurityConfigError, match="does not match"):
        EmbeddedServer(
            tls_cert_file=pki.cert_file, tls_private_key_file=tmp_path / "pki" / "ca.key"
        )
    # non-loopback binds need authentication, or the explicit opt-in
    with pytest.raises(ValueError, match="not a loopback address"):
        EmbeddedServer(host="0.0.0.0")
    EmbeddedServer(host="0.0.0.0", tls=True, pki_dir=tmp_path / "pki2")


async def test_given_serving_certificate(tmp_path: Path) -> None:
    pki = ServerPki.ensure(tmp_path / "pki")
    async with EmbeddedServer(
        tls_cert_file=pki.cert_file, tls_private_key_file=pki.key_file, anonymous_auth=True
    ) as server:
        context = ssl.create_default_context(cadata=pki.ca_pem.decode())
        status, body = await call(server, "GET", "/version", ssl_context=context)
        assert status == 200, body


async def test_rbac_mode_installs_rbac_and_answers_kubes_403(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.csv"
    tokens.write_text('adm,admin,1,"system:masters"\nbob,bob,2\n')
    async with EmbeddedServer(token_auth_file=tokens, authorizer="RBAC") as server:
        path = "/api/v1/namespaces/default/configmaps"
        status, _ = await call(server, "GET", path, headers={"Authorization": "Bearer adm"})
        assert status == 200
        status, body = await call(server, "GET", path, headers={"Authorization": "Bearer bob"})
        assert (status, body["message"]) == (
            403,
            'configmaps is forbidden: User "bob" cannot list resource "configmaps" in API '
            'group "" in the namespace "default"',
        )
        # the default roles are there: bob may still ask who he is
        assert (await whoami(server, headers={"Authorization": "Bearer bob"}))["username"] == "bob"
