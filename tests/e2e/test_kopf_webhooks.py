"""kopf's own admission webhooks against the embedded API server, unchanged.

A kopf operator (``kopf run``, a subprocess) registers ``@kopf.on.validate`` and
``@kopf.on.mutate`` handlers for the demo ``Database`` kind, serves them with
``kopf.WebhookServer`` (its aiohttp server and its self-signed certificate, the
certificate being its own CA) and manages the ``auto.kopf.dev`` webhook configurations
itself (``settings.admission.managed``) with ``clientConfig.url`` and the certificate as
``caBundle``. kubectl then sees kube-apiserver's answers: the denial worded
``admission webhook "NAME" denied the request: MSG``, the handler's warning as
``Warning:``, the mutated object read back, an update denied by an UPDATE-only check.

kopf's self-signed certificate is built by ``certbuilder``/``oscrypto`` (the ``kopf[dev]``
extra). oscrypto 1.3.0, the newest release, cannot load OpenSSL >= 3.0.10 (it fails to
parse the version string), so where it cannot the operator builds the same certificate
(the same subject, SANs, CA flag, key usages, self-signed) with ``cryptography``;
everything else is kopf's code path.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubewerk.apiserver.server import EmbeddedServer

from .conftest import KubectlRun

pytestmark = pytest.mark.e2e


@pytest.fixture(params=["plain", "tls"])
def tserver(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[EmbeddedServer]:
    """The embedded server over plain HTTP, and over TLS with its own CA and an admin
    client certificate in the kubeconfig (``kubewerk up --tls``): kopf logs in with it."""
    tls = request.param == "tls"
    pki = tmp_path_factory.mktemp("pki") / "pki" if tls else None
    srv = EmbeddedServer("memory", bookmark_interval=0.5, tls=tls, pki_dir=pki)
    srv.start_in_thread()
    try:
        yield srv
    finally:
        srv.stop_thread()


OPERATOR_SOURCE = '''
"""kopf admission handlers for the demo Database kind (written by test_kopf_webhooks)."""
import datetime
import ipaddress
from typing import Any

import kopf


def _cryptography_certificate(hostnames, password=None):
    """The certificate kopf's build_certificate makes, built with cryptography."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    ips, names = [], []
    for h in hostnames:
        try:
            ip = ipaddress.ip_address(h)
        except ValueError:
            names.append(h)
        else:
            if not ip.is_unspecified:
                ips.append(ip)
    common = names[0] if names else str(ips[0])
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])
    now = datetime.datetime.now(datetime.timezone.utc)
    sans = [x509.DNSName(n) for n in sorted(set(names) | {str(i) for i in ips})]
    sans += [x509.IPAddress(i) for i in sorted(set(ips))]
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=365))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True, key_encipherment=True, key_cert_sign=True,
                crl_sign=True, content_commitment=False, data_encipherment=False,
                key_agreement=False, encipher_only=False, decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(
            x509.ExtendedKeyUsage(
                [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
            ),
            critical=False,
        )
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    enc = (serialization.BestAvailableEncryption(password.encode()) if password
           else serialization.NoEncryption())
    return (
        cert.public_bytes(serialization.Encoding.PEM),
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, enc),
    )


class SelfSignedServer(kopf.WebhookServer):
    """kopf.WebhookServer; its self-signed certificate from kopf when oscrypto loads."""

    @staticmethod
    def build_certificate(hostnames, password=None):
        try:
            return kopf.WebhookServer.build_certificate(hostnames, password)
        except Exception as exc:  # MissingDependencyError, oscrypto's LibraryNotFoundError
            print(f"kopf cannot build its certificate here ({type(exc).__name__}); "
                  "building the same one with cryptography", flush=True)
            return _cryptography_certificate(hostnames, password)


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    settings.peering.standalone = True
    settings.admission.server = SelfSignedServer(addr="127.0.0.1", port=PORT)
    settings.admission.managed = "auto.kopf.dev"
    settings.watching.server_timeout = 30
    settings.watching.client_timeout = 40


@kopf.on.validate("demo.kubewerk.dev", "v1", "databases", id="check-version")
def check_version(spec: Any, warnings: list[str], **_: Any) -> None:
    if spec.get("version") == "0":
        raise kopf.AdmissionError("version 0 was never released")
    if spec.get("engine") == "mysql":
        warnings.append("mysql databases are deprecated here")


@kopf.on.validate(
    "demo.kubewerk.dev", "v1", "databases", id="no-shrink", operations=["UPDATE"]
)
def no_shrink(spec: Any, old: Any, **_: Any) -> None:
    before = (old or {}).get("spec", {}).get("replicas", 0)
    if spec.get("replicas", 0) < before:
        raise kopf.AdmissionError(f"replicas may not go down from {before}", code=422)


@kopf.on.mutate("demo.kubewerk.dev", "v1", "databases", id="stamp")
def stamp(patch: kopf.Patch, spec: Any, **_: Any) -> None:
    patch.metadata.labels["stamped-by"] = "kopf"
    if "version" not in spec:
        patch.spec["version"] = "16"


@kopf.on.create("demo.kubewerk.dev", "v1", "databases")
def created(**_: Any) -> None:
    pass
'''

KOPF_RUN = (sys.executable, "-m", "kopf", "run", "--standalone", "--namespace", "default", "-v")
DB = "database.demo.kubewerk.dev"
WEBHOOK = "check-version.auto.kopf.dev"


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Operator:
    """``kopf run --standalone`` of the generated module, as a subprocess."""

    def __init__(self, kubeconfig: Path, directory: Path) -> None:
        self.module = directory / "webhook_operator.py"
        self.module.write_text(OPERATOR_SOURCE.replace("PORT)", f"{free_port()})"))
        self.log = directory / "kopf.log"
        env = {**os.environ, "KUBECONFIG": str(kubeconfig), "PYTHONUNBUFFERED": "1"}
        with self.log.open("a") as out:
            self.proc = subprocess.Popen(
                [*KOPF_RUN, str(self.module)],
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=directory,
            )

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)


@pytest.fixture
def operator(kubeconfig: Path, tmp_path: Path, demo: Path) -> Iterator[Operator]:
    op = Operator(kubeconfig, tmp_path)
    try:
        yield op
    finally:
        op.stop()


def get_json(kc: KubectlRun, *args: str) -> Any:
    return json.loads(kc("get", *args, "-o", "json").stdout)


def wait_for_webhooks(kc: KubectlRun, operator: Operator, timeout: float = 40.0) -> None:
    """Until kopf has written both managed configurations with its client config."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done = 0
        for kind in ("validatingwebhookconfiguration", "mutatingwebhookconfiguration"):
            proc = kc("get", kind, "auto.kopf.dev", "-o", "json", check=False)
            if proc.returncode == 0:
                hooks = json.loads(proc.stdout).get("webhooks") or []
                if hooks and all(h["clientConfig"].get("caBundle") for h in hooks):
                    done += 1
        if done == 2:
            return
        assert operator.proc.poll() is None, operator.log.read_text()
        time.sleep(0.2)
    pytest.fail("kopf did not register its webhooks:\n" + operator.log.read_text())


def manifest(name: str, **spec: Any) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "demo.kubewerk.dev/v1",
            "kind": "Database",
            "metadata": {"name": name},
            "spec": {"engine": "postgres", **spec},
        }
    )


def test_kopf_validate_and_mutate_webhooks(kc: KubectlRun, operator: Operator) -> None:
    wait_for_webhooks(kc, operator)
    validating = get_json(kc, "validatingwebhookconfiguration", "auto.kopf.dev")
    hook = next(h for h in validating["webhooks"] if h["name"] == WEBHOOK)
    assert hook["clientConfig"]["url"].startswith("https://127.0.0.1:")
    assert hook["sideEffects"] == "None" and hook["matchPolicy"] == "Equivalent"

    # a denial: kopf's AdmissionError (code 500 by default) in kube's words
    denied = kc("apply", "-f", "-", input=manifest("zero", version="0"), check=False)
    assert denied.returncode == 1
    assert denied.stderr.strip() == (
        'Error from server: error when creating "STDIN": admission webhook '
        f'"{WEBHOOK}" denied the request: version 0 was never released'
    )
    assert kc("get", "db", "zero", check=False).returncode != 0

    # a warning: kubectl prints the handler's warning, the object is created
    warned = kc("apply", "-f", "-", input=manifest("old-school", engine="mysql", version="8"))
    assert "Warning: mysql databases are deprecated here" in warned.stderr
    assert warned.stdout.strip() == f"{DB}/old-school created"

    # a mutation: the label and the defaulted version are in the stored object
    kc("apply", "-f", "-", input=manifest("plain", replicas=3))
    db = get_json(kc, "db", "plain")
    assert db["metadata"]["labels"] == {"stamped-by": "kopf"}
    assert db["spec"]["version"] == "16"
    assert db["spec"]["replicas"] == 3

    # an UPDATE-only check with its own code; the mutating webhook runs on updates too
    shrink = kc(
        "patch", "db", "plain", "--type=merge", "-p", '{"spec":{"replicas":2}}', check=False
    )
    assert shrink.returncode == 1
    assert shrink.stderr.strip() == (
        'Error from server: admission webhook "no-shrink.auto.kopf.dev" denied the request: '
        "replicas may not go down from 3"
    )
    kc("patch", "db", "plain", "--type=merge", "-p", '{"spec":{"replicas":4}}')
    assert get_json(kc, "db", "plain")["spec"]["replicas"] == 4

    # dry run: kopf's webhooks declare sideEffects None, so they are called and deny alike
    dry = kc(
        "apply", "--dry-run=server", "-f", "-", input=manifest("zero", version="0"), check=False
    )
    assert "version 0 was never released" in dry.stderr

    # kopf logs each denial as a failed handler; nothing else may have gone wrong
    text = operator.log.read_text()
    assert "Traceback" not in text, text
    errors = [line for line in text.splitlines() if "[ERROR" in line]
    assert len(errors) == 3, errors
    assert all("failed permanently: " in line for line in errors), errors
