"""Kubeconfig and in-cluster loading, exec plugins, TLS material."""

from __future__ import annotations

import base64
import os
import ssl
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from kubewerk.client import ConfigError, load_incluster, load_kubeconfig
from kubewerk.client.config import ExecAuthenticator, TokenFileAuthenticator, load_config


def write_config(
    path: Path,
    *,
    clusters: list[dict],
    users: list[dict],
    contexts: list[dict],
    current: str | None = "c1",
) -> Path:
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": clusters,
        "users": users,
        "contexts": contexts,
    }
    if current:
        doc["current-context"] = current
    path.write_text(yaml.safe_dump(doc))
    return path


def simple(tmp_path: Path, user: dict, cluster: dict | None = None, name: str = "config") -> Path:
    return write_config(
        tmp_path / name,
        clusters=[{"name": "k", "cluster": cluster or {"server": "https://k.example:6443"}}],
        users=[{"name": "u", "user": user}],
        contexts=[{"name": "c1", "context": {"cluster": "k", "user": "u", "namespace": "team"}}],
    )


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """A self-signed CA and a client certificate (openssl)."""
    d = tmp_path_factory.mktemp("pki")
    run = lambda *a: subprocess.run(a, cwd=d, check=True, capture_output=True)  # noqa: E731
    run(
        "openssl",
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
        "-days",
        "1",
        "-subj",
        "/CN=test-ca",
    )
    run(
        "openssl",
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "client.key",
        "-out",
        "client.csr",
        "-subj",
        "/CN=client",
    )
    run(
        "openssl",
        "x509",
        "-req",
        "-in",
        "client.csr",
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "client.crt",
        "-days",
        "1",
    )
    return {n: (d / n).read_bytes() for n in ("ca.crt", "client.crt", "client.key")}


async def test_token_context_namespace_and_ca_data(tmp_path: Path, pki: dict[str, bytes]) -> None:
    cfg = load_kubeconfig(
        simple(
            tmp_path,
            {"token": "abc"},
            {
                "server": "https://k:6443/",
                "certificate-authority-data": base64.b64encode(pki["ca.crt"]).decode(),
            },
        )
    )
    assert cfg.server == "https://k:6443"
    assert cfg.namespace == "team"
    assert (await cfg.auth.credentials()).token == "abc"
    ctx = cfg.ssl_context()
    assert isinstance(ctx, ssl.SSLContext) and ctx.verify_mode == ssl.CERT_REQUIRED


def test_client_certificate_files_relative_to_kubeconfig(
    tmp_path: Path, pki: dict[str, bytes]
) -> None:
    (tmp_path / "certs").mkdir()
    for name, data in pki.items():
        (tmp_path / "certs" / name).write_bytes(data)
    cfg = load_kubeconfig(
        simple(
            tmp_path,
            {"client-certificate": "certs/client.crt", "client-key": "certs/client.key"},
            {"server": "https://k:6443", "certificate-authority": "certs/ca.crt"},
        )
    )
    assert cfg.client_cert_pem == pki["client.crt"]
    assert cfg.ca_pem == pki["ca.crt"]
    assert cfg.ssl_context() is not None  # the key pair loads


def test_insecure_skip_tls_verify(tmp_path: Path) -> None:
    cfg = load_kubeconfig(
        simple(tmp_path, {}, {"server": "https://k:6443", "insecure-skip-tls-verify": True})
    )
    ctx = cfg.ssl_context()
    assert ctx is not None and ctx.verify_mode == ssl.CERT_NONE and not ctx.check_hostname


def test_explicit_context_and_kubeconfig_env_merge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = write_config(
        tmp_path / "a",
        clusters=[{"name": "k", "cluster": {"server": "http://first:1"}}],
        users=[{"name": "u", "user": {"token": "first"}}],
        contexts=[{"name": "c1", "context": {"cluster": "k", "user": "u"}}],
        current="c1",
    )
    b = write_config(
        tmp_path / "b",
        clusters=[
            {"name": "k", "cluster": {"server": "http://second:1"}},
            {"name": "k2", "cluster": {"server": "http://other:2"}},
        ],
        users=[{"name": "u", "user": {"token": "second"}}],
        contexts=[{"name": "c2", "context": {"cluster": "k2", "user": "u"}}],
        current="c2",
    )
    monkeypatch.setenv("KUBECONFIG", f"{a}{os.pathsep}{tmp_path / 'missing'}{os.pathsep}{b}")
    cfg = load_kubeconfig()
    assert cfg.context == "c1" and cfg.server == "http://first:1"  # first file wins
    cfg2 = load_kubeconfig(context="c2")
    assert cfg2.server == "http://other:2" and cfg2.namespace == "default"


async def test_token_file_is_reread_after_rotation(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("one\n")
    cfg = load_kubeconfig(simple(tmp_path, {"tokenFile": str(token)}))
    assert isinstance(cfg.auth, TokenFileAuthenticator)
    assert (await cfg.auth.credentials()).token == "one"
    token.write_text("two")
    assert (await cfg.auth.credentials()).token == "one"  # cached for a minute
    cfg.auth.reread_seconds = 0
    assert (await cfg.auth.credentials()).token == "two"
    token.write_text("three")
    assert cfg.auth.invalidate() is True  # a 401 forces a re-read


# (the backslash below joins two lines of the template: the plugin sees one)
EXEC_PLUGIN = """#!{python}
import json, os, sys, pathlib
info = json.loads(os.environ["KUBERNETES_EXEC_INFO"])
counter = pathlib.Path(sys.argv[1])
n = int(counter.read_text()) + 1 if counter.exists() else 1
counter.write_text(str(n))
status = {{"token": "tok-%d-%s" % (n, os.environ.get("EXTRA", "")), \
"expirationTimestamp": sys.argv[2]}}
if info["spec"].get("cluster"):
    status["token"] += "-" + info["spec"]["cluster"]["server"]
print(json.dumps({{"apiVersion": info["apiVersion"], "kind": "ExecCredential", "status": status}}))
"""


def plugin(tmp_path: Path) -> Path:
    path = tmp_path / "bin" / "cred"
    path.parent.mkdir(exist_ok=True)
    path.write_text(EXEC_PLUGIN.format(python=sys.executable))
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


async def test_exec_plugin_cached_until_expiry(tmp_path: Path) -> None:
    counter = tmp_path / "count"
    exec_cfg = {
        "apiVersion": "client.authentication.k8s.io/v1",
        "command": "./bin/cred",  # relative to the kubeconfig's directory
        "args": [str(counter), "2999-01-01T00:00:00Z"],
        "env": [{"name": "EXTRA", "value": "x"}],
        "provideClusterInfo": True,
        "interactiveMode": "Never",
    }
    plugin(tmp_path)
    cfg = load_kubeconfig(simple(tmp_path, {"exec": exec_cfg}))
    auth = cfg.auth
    assert isinstance(auth, ExecAuthenticator)
    first = await auth.credentials()
    assert first.token == "tok-1-x-https://k.example:6443"
    assert (await auth.credentials()).token == first.token and auth.runs == 1
    auth.invalidate()  # as after a 401
    assert (await auth.credentials()).token.startswith("tok-2-")


async def test_exec_plugin_expired_credentials_rerun(tmp_path: Path) -> None:
    counter = tmp_path / "count"
    plugin(tmp_path)
    exec_cfg = {
        "apiVersion": "client.authentication.k8s.io/v1beta1",
        "command": str(tmp_path / "bin" / "cred"),
        "args": [str(counter), "2000-01-01T00:00:00Z"],
    }
    cfg = load_kubeconfig(simple(tmp_path, {"exec": exec_cfg}))
    await cfg.auth.credentials()
    await cfg.auth.credentials()
    assert isinstance(cfg.auth, ExecAuthenticator) and cfg.auth.runs == 2


async def test_exec_plugin_failures_are_one_sentence(tmp_path: Path) -> None:
    cfg = load_kubeconfig(
        simple(
            tmp_path,
            {
                "exec": {
                    "apiVersion": "client.authentication.k8s.io/v1",
                    "command": "no-such-plugin-xyz",
                    "installHint": "install it",
                }
            },
        )
    )
    with pytest.raises(ConfigError, match=r"could not be started.*install it"):
        await cfg.auth.credentials()
    failing = tmp_path / "fail.sh"
    failing.write_text("#!/bin/sh\necho 'boom: no login' >&2\nexit 3\n")
    failing.chmod(0o755)
    cfg = load_kubeconfig(
        simple(
            tmp_path,
            {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": str(failing)}},
            name="c2",
        )
    )
    with pytest.raises(ConfigError, match="exited with code 3: boom: no login"):
        await cfg.auth.credentials()


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d.update({"current-context": "nope"}), "context 'nope' not found in kubeconfig"),
        (
            lambda d: d["contexts"][0]["context"].update({"cluster": "gone"}),
            "refers to cluster 'gone'",
        ),
        (lambda d: d["contexts"][0]["context"].update({"user": "ghost"}), "refers to user 'ghost'"),
        (lambda d: d["clusters"][0]["cluster"].update({"server": "k:6443"}), "is not an http"),
        (lambda d: d["clusters"][0]["cluster"].pop("server"), "no server URL"),
        (
            lambda d: d["clusters"][0]["cluster"].update({"certificate-authority-data": "%%%"}),
            "not valid base64",
        ),
        (
            lambda d: d["clusters"][0]["cluster"].update({"certificate-authority": "/nope/ca.crt"}),
            "cannot read certificate authority",
        ),
        (
            lambda d: d["users"][0]["user"].update({"client-certificate-data": "YQ=="}),
            "needs a client key",
        ),
        (
            lambda d: d["users"][0]["user"].update({"auth-provider": {"name": "gcp"}}),
            "auth-provider 'gcp' is not supported",
        ),
        (
            lambda d: d["users"][0]["user"].update({"tokenFile": "/nope/token"}),
            "cannot read token file",
        ),
        (
            lambda d: d["users"][0]["user"].update(
                {"exec": {"apiVersion": "client.authentication.k8s.io/v1alpha1", "command": "x"}}
            ),
            "exec apiVersion",
        ),
        (lambda d: d.pop("current-context"), "has no current-context"),
    ],
)
def test_invalid_kubeconfigs_raise_one_clear_error(tmp_path: Path, mutate, message: str) -> None:
    path = simple(tmp_path, {})
    doc = yaml.safe_load(path.read_text())
    mutate(doc)
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(ConfigError, match=message):
        load_kubeconfig(path)


def test_unreadable_or_malformed_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_kubeconfig(tmp_path / "absent")
    bad = tmp_path / "bad"
    bad.write_text("clusters: [\n  - name: x\n  bad")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_kubeconfig(bad)
    bad.write_text("- just\n- a list\n")
    with pytest.raises(ConfigError, match="not a mapping"):
        load_kubeconfig(bad)


def test_insecure_with_ca_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot both be set"):
        load_kubeconfig(
            simple(
                tmp_path,
                {},
                {
                    "server": "https://k",
                    "insecure-skip-tls-verify": True,
                    "certificate-authority-data": "YQ==",
                },
            )
        )


async def test_incluster(tmp_path: Path, pki: dict[str, bytes]) -> None:
    (tmp_path / "token").write_text("sa-token")
    (tmp_path / "ca.crt").write_bytes(pki["ca.crt"])
    (tmp_path / "namespace").write_text("ops")
    cfg = load_incluster(
        tmp_path, {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    )
    assert cfg.server == "https://10.0.0.1:443"
    assert cfg.namespace == "ops"
    assert (await cfg.auth.credentials()).token == "sa-token"
    v6 = load_incluster(
        tmp_path, {"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "443"}
    )
    assert v6.server == "https://[fd00::1]:443"
    with pytest.raises(ConfigError, match="not running in a cluster"):
        load_incluster(tmp_path, {})


def test_load_config_prefers_explicit_kubeconfig(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    cfg = load_config(simple(tmp_path, {"token": "t"}))
    assert cfg.server == "https://k.example:6443"
