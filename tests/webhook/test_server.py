"""The webhook server over real sockets: HTTPS with the generated certificates, reload,
client certificates, metrics, and inside a runtime Manager."""

from __future__ import annotations

import asyncio
import datetime
import ssl
from pathlib import Path
from typing import Any

import pytest

from kubewerk.webhook import CertificateSet, WebhookServer, make_certificates, write_certificates

from .conftest import client_context, database, http_post, kube_review
from .models import make_app

VALIDATE = "/validate-webhook-test-kubewerk-dev-v1-database"
HOST = "db-webhook.ops.svc"  # what kube-apiserver dials for service db-webhook in ops


def _client_cert(ca: CertificateSet, tmp: Path) -> tuple[Path, Path]:
    """A client certificate (clientAuth) signed by ``ca``'s CA."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    ca_key = serialization.load_pem_private_key(ca.ca_key, None)
    ca_cert = x509.load_pem_x509_certificate(ca.ca_cert)
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=1)
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())  # type: ignore[arg-type]
    )
    cert_path, key_path = tmp / "client.crt", tmp / "client.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


async def test_https_review_verified_against_the_ca_bundle(
    cert_set: CertificateSet, cert_dir: dict[str, Path]
) -> None:
    server = WebhookServer(
        make_app(), host="127.0.0.1", port=0, cert_file=cert_dir["cert"], key_file=cert_dir["key"]
    )
    async with server:
        assert server.url == f"https://127.0.0.1:{server.port}"
        ctx = client_context(cert_set.ca_cert)
        for name in (HOST, f"{HOST}.cluster.local", "localhost"):
            answer = await http_post(
                server.port,
                VALIDATE,
                kube_review("CREATE", database()),
                ssl_context=ctx,
                server_hostname=name,
            )
            assert answer.status == 200 and answer.json()["response"]["allowed"] is True
        # a name outside the SANs fails verification, as kube-apiserver's client would
        with pytest.raises(ssl.SSLCertVerificationError):
            await http_post(
                server.port,
                VALIDATE,
                kube_review("CREATE", database()),
                ssl_context=ctx,
                server_hostname="other.ops.svc",
            )
        # plain HTTP to a TLS port gets no answer
        with pytest.raises((ConnectionError, ValueError, IndexError)):
            await http_post(server.port, VALIDATE, kube_review("CREATE", database()))


async def test_certificate_reload_without_restart(tmp_path: Path) -> None:
    first = make_certificates("db-webhook", "ops", days=1)
    second = make_certificates("db-webhook", "ops", days=1)
    paths = write_certificates(first, tmp_path)
    server = WebhookServer(
        make_app(),
        host="127.0.0.1",
        port=0,
        cert_file=paths["cert"],
        key_file=paths["key"],
        reload_interval=0.05,
    )
    async with server:
        body = kube_review("CREATE", database())
        ok = await http_post(
            server.port,
            VALIDATE,
            body,
            ssl_context=client_context(first.ca_cert),
            server_hostname=HOST,
        )
        assert ok.status == 200
        # a connection kept open across the change keeps working
        reader, writer = await asyncio.open_connection(
            "127.0.0.1", server.port, ssl=client_context(first.ca_cert), server_hostname=HOST
        )
        write_certificates(second, tmp_path)
        for _ in range(200):
            if server.tls is not None and server.tls.reloads:
                break
            await asyncio.sleep(0.02)
        assert server.tls is not None and server.tls.reloads == 1
        new = await http_post(
            server.port,
            VALIDATE,
            body,
            ssl_context=client_context(second.ca_cert),
            server_hostname=HOST,
        )
        assert new.status == 200
        with pytest.raises(ssl.SSLCertVerificationError):
            await http_post(
                server.port,
                VALIDATE,
                body,
                ssl_context=client_context(first.ca_cert),
                server_hostname=HOST,
            )
        data = b"{}"
        writer.write(
            f"POST {VALIDATE} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(data)}\r\n\r\n".encode()
            + data
        )
        await writer.drain()
        line = await asyncio.wait_for(reader.readline(), 5)
        assert line.startswith(b"HTTP/1.1 400")  # answered over the old session
        writer.close()


async def test_a_broken_pair_keeps_the_old_one(tmp_path: Path, cert_set: CertificateSet) -> None:
    paths = write_certificates(cert_set, tmp_path)
    server = WebhookServer(
        make_app(),
        host="127.0.0.1",
        port=0,
        cert_file=paths["cert"],
        key_file=paths["key"],
        reload_interval=0.05,
    )
    async with server:
        paths["cert"].write_bytes(b"-----BEGIN CERTIFICATE-----\nnot a certificate\n")
        assert server.tls is not None and server.tls.reload_if_changed() is False
        ok = await http_post(
            server.port,
            VALIDATE,
            kube_review("CREATE", database()),
            ssl_context=client_context(cert_set.ca_cert),
            server_hostname=HOST,
        )
        assert ok.status == 200


async def test_client_certificates_required(
    tmp_path: Path, cert_set: CertificateSet, cert_dir: dict[str, Path]
) -> None:
    server = WebhookServer(
        make_app(),
        host="127.0.0.1",
        port=0,
        cert_file=cert_dir["cert"],
        key_file=cert_dir["key"],
        client_ca_file=cert_dir["ca_cert"],
    )
    body = kube_review("CREATE", database())
    async with server:
        anonymous = client_context(cert_set.ca_cert)
        with pytest.raises((ssl.SSLError, ConnectionError, ValueError, IndexError)):
            await http_post(
                server.port, VALIDATE, body, ssl_context=anonymous, server_hostname=HOST
            )
        stranger = make_certificates("someone", "else", days=1)
        foreign = client_context(cert_set.ca_cert)
        (tmp_path / "s").mkdir()
        s_cert, s_key = _client_cert(stranger, tmp_path / "s")
        foreign.load_cert_chain(s_cert, s_key)
        with pytest.raises((ssl.SSLError, ConnectionError, ValueError, IndexError)):
            await http_post(server.port, VALIDATE, body, ssl_context=foreign, server_hostname=HOST)
        c_cert, c_key = _client_cert(cert_set, tmp_path)
        trusted = client_context(cert_set.ca_cert)
        trusted.load_cert_chain(c_cert, c_key)
        answer = await http_post(
            server.port, VALIDATE, body, ssl_context=trusted, server_hostname=HOST
        )
        assert answer.status == 200 and answer.json()["response"]["allowed"] is True


def test_configuration_mistakes(tmp_path: Path, cert_dir: dict[str, Path]) -> None:
    app = make_app()
    with pytest.raises(ValueError, match="both cert_file and key_file"):
        WebhookServer(app, cert_file=cert_dir["cert"])
    with pytest.raises(ValueError, match="client_ca_file needs TLS"):
        WebhookServer(app, client_ca_file=cert_dir["ca_cert"])


async def test_unusable_files_and_ports_fail_start(
    tmp_path: Path, cert_dir: dict[str, Path]
) -> None:
    app = make_app()
    with pytest.raises(OSError):
        await WebhookServer(
            app,
            host="127.0.0.1",
            port=0,
            cert_file=tmp_path / "missing.crt",
            key_file=cert_dir["key"],
        ).start()
    other = make_certificates("x", "y", days=1)
    mismatched = write_certificates(other, tmp_path / "other")
    with pytest.raises(ssl.SSLError, match="not a usable certificate and key"):
        await WebhookServer(
            app, host="127.0.0.1", port=0, cert_file=cert_dir["cert"], key_file=mismatched["key"]
        ).start()
    async with WebhookServer(app, host="127.0.0.1", port=0) as first:
        with pytest.raises(OSError, match=f"cannot serve webhooks on 127.0.0.1:{first.port}"):
            await WebhookServer(make_app(), host="127.0.0.1", port=first.port).start()


def _samples(registry: Any, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    out = {}
    for family in registry.collect():
        for s in family.samples:
            if s.name == name:
                out[tuple(sorted(s.labels.items()))] = s.value
    return out


async def test_metrics_over_plain_http() -> None:
    app = make_app()
    async with WebhookServer(app, host="127.0.0.1", port=0) as server:
        assert server.url.startswith("http://")
        for _ in range(3):
            assert (
                await http_post(server.port, VALIDATE, kube_review("CREATE", database()))
            ).status == 200
        assert (await http_post(server.port, VALIDATE, b"nope")).status == 400
        assert (
            await http_post(server.port, "/convert", {"kind": "ConversionReview"})
        ).status == 400
    reg = app.metrics.registry
    total = _samples(reg, "controller_runtime_webhook_requests_total")
    assert total[(("code", "200"), ("webhook", VALIDATE))] == 3
    assert total[(("code", "400"), ("webhook", VALIDATE))] == 1
    assert (
        total[(("code", "500"), ("webhook", VALIDATE))] == 0
    )  # initialised as controller-runtime does
    assert total[(("code", "400"), ("webhook", "/convert"))] == 1
    latency = _samples(reg, "controller_runtime_webhook_latency_seconds_count")
    assert latency[(("webhook", VALIDATE),)] == 4
    buckets = _samples(reg, "controller_runtime_webhook_latency_seconds_bucket")
    assert (("le", "1e-08"), ("webhook", VALIDATE)) in buckets
    assert (
        _samples(reg, "controller_runtime_webhook_requests_in_flight")[(("webhook", VALIDATE),)]
        == 0
    )


async def test_in_flight_gauge_counts_a_request_in_progress() -> None:
    from kubewerk.webhook import AdmissionRequest, Allowed, WebhookApp

    from .models import Database

    app = WebhookApp()
    entered, release = asyncio.Event(), asyncio.Event()

    @app.validating(Database, "/slow")
    async def slow(db: Database, old: Database | None, req: AdmissionRequest) -> Allowed:
        entered.set()
        await release.wait()
        return Allowed()

    async with WebhookServer(app, host="127.0.0.1", port=0) as server:
        call = asyncio.create_task(
            http_post(server.port, "/slow", kube_review("CREATE", database()))
        )
        await asyncio.wait_for(entered.wait(), 5)
        gauge = _samples(app.metrics.registry, "controller_runtime_webhook_requests_in_flight")
        assert gauge[(("webhook", "/slow"),)] == 1
        release.set()
        assert (await call).status == 200


async def test_runs_inside_the_manager(
    run_manager: Any, cert_set: CertificateSet, cert_dir: dict[str, Path]
) -> None:
    """One process: the manager starts and stops the server; /metrics shows its series."""
    from kubewerk.runtime.manager import Manager

    mgr = Manager(probe_host="127.0.0.1", probe_port=0)
    app = make_app()
    server = WebhookServer(
        app, host="127.0.0.1", port=0, cert_file=cert_dir["cert"], key_file=cert_dir["key"]
    )
    server.add_to(mgr)
    await run_manager(mgr)
    for _ in range(500):
        if server.started:
            break
        await asyncio.sleep(0.01)
    assert server.started
    answer = await http_post(
        server.port,
        VALIDATE,
        kube_review("CREATE", database()),
        ssl_context=client_context(cert_set.ca_cert),
        server_hostname=HOST,
    )
    assert answer.status == 200
    assert app.metrics.registry is mgr.metrics.registry
    exposition = mgr.metrics.exposition().decode()
    assert (
        f'controller_runtime_webhook_requests_total{{code="200",webhook="{VALIDATE}"}} 1.0'
        in exposition
    )
    assert (
        "controller_runtime_reconcile_total" in exposition
        or "process_resident_memory_bytes" in exposition
    )
    # a second server on the same manager shares the families
    assert make_app().use_registry(mgr.metrics.registry) is app.metrics
    port = server.port
    await mgr.stop()
    assert not server.started
    with pytest.raises(OSError):
        await asyncio.open_connection("127.0.0.1", port)
