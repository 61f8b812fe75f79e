"""The real ``kubectl`` against ``kubewerk``'s TLS server with authentication: the admin
client-certificate kubeconfig, a static-token kubeconfig, ``kubectl create token`` and a
ServiceAccount-token kubeconfig, ``kubectl auth whoami`` for each, and the failures
(wrong CA, no credentials) in kubectl's own words."""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubewerk.apiserver.server import EmbeddedServer

pytestmark = pytest.mark.e2e


@pytest.fixture
def secured(tmp_path: Path) -> Iterator[EmbeddedServer]:
    tokens = tmp_path / "tokens.csv"
    tokens.write_text('secret-alice,alice,uid-a,"dev,ops"\n')
    server = EmbeddedServer(tls=True, token_auth_file=tokens, pki_dir=tmp_path / "pki")
    server.start_in_thread()
    try:
        yield server
    finally:
        server.stop_thread()


def kubectl(kubeconfig: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    binary = shutil.which("kubectl")
    if binary is None:
        pytest.skip("kubectl is not installed")
    proc = subprocess.run(
        [binary, f"--cache-dir={kubeconfig.parent / 'cache'}", *args],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "KUBECONFIG": str(kubeconfig)},
        check=False,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)}: {proc.stdout}\n{proc.stderr}")
    return proc


def whoami_rows(kubeconfig: Path) -> list[list[str]]:
    out = kubectl(kubeconfig, "auth", "whoami").stdout
    return [line.split() for line in out.strip().splitlines()]


def test_admin_certificate_token_and_service_account_kubeconfigs(
    secured: EmbeddedServer, tmp_path: Path
) -> None:
    admin = secured.write_kubeconfig(tmp_path / "admin.yaml")
    assert whoami_rows(admin) == [
        ["ATTRIBUTE", "VALUE"],
        ["Username", "kubewerk-admin"],
        ["Groups", "[system:masters", "system:authenticated]"],
    ]
    assert "default" in kubectl(admin, "get", "namespaces", "-o", "name").stdout

    alice = secured.write_kubeconfig(tmp_path / "alice.yaml", token="secret-alice")
    assert whoami_rows(alice) == [
        ["ATTRIBUTE", "VALUE"],
        ["Username", "alice"],
        ["UID", "uid-a"],
        ["Groups", "[dev", "ops", "system:authenticated]"],
    ]

    kubectl(admin, "create", "serviceaccount", "robot")
    token = kubectl(admin, "create", "token", "robot", "--duration=20m").stdout.strip()
    assert token.count(".") == 2
    robot = secured.write_kubeconfig(tmp_path / "robot.yaml", token=token)
    rows = whoami_rows(robot)
    assert rows[1] == ["Username", "system:serviceaccount:default:robot"]
    assert rows[3] == [
        "Groups",
        "[system:serviceaccounts",
        "system:serviceaccounts:default",
        "system:authenticated]",
    ]
    short = kubectl(admin, "create", "token", "robot", "--duration=1m", check=False)
    assert short.returncode == 1
    assert "may not specify a duration less than 10 minutes" in short.stderr

    # the ServiceAccount deleted, its token no longer authenticates
    kubectl(admin, "delete", "serviceaccount", "robot")
    gone = kubectl(robot, "get", "namespaces", check=False)
    assert gone.returncode == 1
    assert "error: You must be logged in to the server" in gone.stderr


def test_no_credentials_and_wrong_ca_fail_in_kubectls_words(
    secured: EmbeddedServer, tmp_path: Path
) -> None:
    nobody = secured.write_kubeconfig(tmp_path / "nobody.yaml", token="not-a-token")
    proc = kubectl(nobody, "get", "namespaces", check=False)
    assert proc.returncode == 1
    assert "error: You must be logged in to the server" in proc.stderr

    other = EmbeddedServer(tls=True, pki_dir=tmp_path / "other-pki")
    assert other.pki is not None and secured.pki is not None
    wrong = secured.write_kubeconfig(tmp_path / "wrong.yaml")
    content = wrong.read_text().replace(
        base64.b64encode(secured.pki.ca_pem).decode(), base64.b64encode(other.pki.ca_pem).decode()
    )
    wrong.write_text(content)
    proc = kubectl(wrong, "get", "namespaces", check=False)
    assert proc.returncode == 1
    assert "certificate signed by unknown authority" in proc.stderr


def test_whoami_with_security_off(tserver: EmbeddedServer, tmp_path: Path) -> None:
    kubeconfig = tserver.write_kubeconfig(tmp_path / "plain.yaml")
    assert whoami_rows(kubeconfig) == [
        ["ATTRIBUTE", "VALUE"],
        ["Username", "system:unsecured"],
        ["Groups", "[system:masters", "system:authenticated]"],
    ]
    out = kubectl(kubeconfig, "auth", "whoami", "--as", "jane", "--as-group", "qa").stdout
    assert out.split() == [
        "ATTRIBUTE",
        "VALUE",
        "Username",
        "jane",
        "Groups",
        "[qa",
        "system:authenticated]",
    ]


def test_can_i_reviews_arrive_as_protobuf(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.csv"
    tokens.write_text('adm,admin,1,"system:masters"\nbob,bob,2\n')
    # kubectl sends bearer tokens over HTTPS only
    server = EmbeddedServer(
        tls=True, token_auth_file=tokens, authorizer="RBAC", pki_dir=tmp_path / "pki"
    ).start_in_thread()
    try:
        admin = server.write_kubeconfig(tmp_path / "admin.yaml", token="adm")
        assert kubectl(admin, "auth", "can-i", "delete", "nodes").stdout.strip() == "yes"
        no = kubectl(admin, "auth", "can-i", "list", "pods", "--as", "bob", check=False)
        assert (no.returncode, no.stdout.strip()) == (1, "no")
        bob = server.write_kubeconfig(tmp_path / "bob.yaml", token="bob")
        rules = kubectl(bob, "auth", "can-i", "--list").stdout
        assert "selfsubjectaccessreviews.authorization.k8s.io" in rules
    finally:
        server.stop_thread()
