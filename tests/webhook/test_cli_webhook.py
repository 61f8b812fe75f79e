"""``kubewerk webhook certs`` and ``kubewerk webhook serve``: files, caBundle, exit codes,
no traceback for user mistakes."""

from __future__ import annotations

import base64
import os
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from kubewerk import cli

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def main() -> object:
    """``kubewerk``'s entry point (the webhook subcommand is one of its commands)."""
    assert "webhook" in cli.SUBCOMMAND_MODULES
    return cli.main


def test_certs_writes_private_files_and_prints_the_ca_bundle(
    main: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from cryptography import x509

    out = tmp_path / "new" / "certs"
    code = main(
        [
            "webhook",
            "certs",
            "--service",
            "db-webhook",
            "--namespace",
            "ops",
            "--out",
            str(out),
            "--days",
            "30",
            "--ip",
            "10.0.0.7",
            "--dns",
            "webhook.example.com",
        ]
    )
    assert code == 0
    captured = capsys.readouterr()
    bundle = captured.out.strip()
    assert base64.b64decode(bundle) == (out / "ca.crt").read_bytes()
    assert "wrote" in captured.err
    assert stat.S_IMODE(out.stat().st_mode) == 0o700
    for name in ("ca.crt", "ca.key", "tls.crt", "tls.key"):
        assert stat.S_IMODE((out / name).stat().st_mode) == 0o600
    cert = x509.load_pem_x509_certificate((out / "tls.crt").read_bytes())
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == [
        "db-webhook.ops.svc",
        "db-webhook.ops.svc.cluster.local",
        "localhost",
        "webhook.example.com",
    ]
    assert [str(ip) for ip in sans.get_values_for_type(x509.IPAddress)] == [
        "127.0.0.1",
        "::1",
        "10.0.0.7",
    ]
    days = (cert.not_valid_after_utc - cert.not_valid_before_utc).days
    assert days == 30
    ca = x509.load_pem_x509_certificate((out / "ca.crt").read_bytes())
    cert.verify_directly_issued_by(ca)


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (
            ["--service", "s", "--namespace", "n", "--ip", "not-an-ip"],
            "--ip 'not-an-ip' is not an IP address",
        ),
        (["--service", "s", "--namespace", "n", "--days", "0"], "days must be positive"),
        (["--service", "", "--namespace", "n"], "needs a service name and a namespace"),
    ],
)
def test_certs_usage_errors(
    main: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], words: str
) -> None:
    assert main(["webhook", "certs", "--out", str(tmp_path / "c"), *args]) == 2
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err


def test_certs_into_a_file_is_a_usage_error(
    main: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "file"
    target.write_text("x")
    assert (
        main(["webhook", "certs", "--service", "s", "--namespace", "n", "--out", str(target)]) == 2
    )
    assert "cannot write certificates" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("target", "words"),
    [
        ("nomodule", "must look like MODULE:APP"),
        ("no_such_module_xyz:app", "cannot import module 'no_such_module_xyz'"),
        ("tests.webhook.models:missing", "has no attribute 'missing'"),
        ("tests.webhook.models:GROUP", "is not a kubewerk.webhook.WebhookApp (got str)"),
    ],
)
def test_serve_bad_targets(
    main: Any, capsys: pytest.CaptureFixture[str], target: str, words: str
) -> None:
    assert main(["webhook", "serve", target]) == 2
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err


def test_serve_bad_files_and_ports(
    main: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    assert main(["webhook", "serve", "tests.webhook.models:app", "--cert", "x.crt"]) == 2
    assert "give both --cert and --key" in capsys.readouterr().err
    assert (
        main(
            [
                "webhook",
                "serve",
                "tests.webhook.models:app",
                "--cert",
                str(tmp_path / "x.crt"),
                "--key",
                str(tmp_path / "x.key"),
                "--port",
                "0",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "kubewerk: error:" in err and "Traceback" not in err
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert (
            main(
                [
                    "webhook",
                    "serve",
                    "tests.webhook.models:app",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(port),
                ]
            )
            == 2
        )
        assert f"cannot serve webhooks on 127.0.0.1:{port}" in capsys.readouterr().err


def test_help(main: Any, capsys: pytest.CaptureFixture[str]) -> None:
    for args in (
        ["webhook", "--help"],
        ["webhook", "serve", "--help"],
        ["webhook", "certs", "--help"],
    ):
        with pytest.raises(SystemExit) as exc:
            main(args)
        assert exc.value.code == 0
    assert "--client-ca" in capsys.readouterr().out


def test_serve_as_a_process_until_sigterm(tmp_path: Path) -> None:
    """A real process: serves over TLS, answers a review, exits 0 on SIGTERM."""
    import ssl

    import orjson

    from kubewerk.webhook import make_certificates, write_certificates

    from .conftest import database, kube_review

    certs = make_certificates("db-webhook", "ops", days=1)
    paths = write_certificates(certs, tmp_path)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kubewerk.cli",
            "webhook",
            "serve",
            "tests.webhook.models:app",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--cert",
            str(paths["cert"]),
            "--key",
            str(paths["key"]),
        ],
        cwd=REPO,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        assert proc.stderr is not None
        line = ""
        deadline = time.monotonic() + 30
        while "serving" not in line and time.monotonic() < deadline:
            line = proc.stderr.readline()
            if not line and proc.poll() is not None:
                break
        assert f"on https://127.0.0.1:{port}" in line, line
        ctx = ssl.create_default_context(cadata=certs.ca_cert.decode())
        body = orjson.dumps(kube_review("CREATE", database()))
        with (
            socket.create_connection(("127.0.0.1", port)) as raw,
            ctx.wrap_socket(raw, server_hostname="db-webhook.ops.svc") as tls,
        ):
            tls.sendall(
                b"POST /validate-webhook-test-kubewerk-dev-v1-database HTTP/1.1\r\nHost: x\r\n"
                b"Content-Type: application/json\r\nConnection: close\r\nContent-Length: "
                + str(len(body)).encode()
                + b"\r\n\r\n"
                + body
            )
            data = b""
            while chunk := tls.recv(65536):
                data += chunk
        assert data.startswith(b"HTTP/1.1 200")
        assert orjson.loads(data.partition(b"\r\n\r\n")[2])["response"]["allowed"] is True
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
