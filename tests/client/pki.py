"""Throwaway TLS material for client tests: a CA and certificates signed by it (openssl)."""

from __future__ import annotations

import ssl
import subprocess
from pathlib import Path

_EC = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")


def issue(d: Path, ca_name: str, certs: dict[str, str | None]) -> dict[str, Path]:
    """In ``d``: ``ca.crt``/``ca.key`` (CN ``ca_name``) and, per name, ``<name>.crt`` and
    ``<name>.key`` valid for one day, with that subjectAltName when one is given.
    Returns every file written, by file name."""

    def run(*args: str) -> None:
        subprocess.run(args, cwd=d, check=True, capture_output=True)

    run(
        "openssl",
        "req",
        "-x509",
        *_EC,
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
        "-days",
        "1",
        "-subj",
        f"/CN={ca_name}",
    )
    for name, san in certs.items():
        ext: tuple[str, ...] = ()
        if san is not None:
            (d / f"{name}.ext").write_text(f"subjectAltName={san}\n")
            ext = ("-extfile", f"{name}.ext")
        run(
            "openssl",
            "req",
            *_EC,
            "-keyout",
            f"{name}.key",
            "-out",
            f"{name}.csr",
            "-subj",
            f"/CN={name}",
        )
        run(
            "openssl",
            "x509",
            "-req",
            "-in",
            f"{name}.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            f"{name}.crt",
            "-days",
            "1",
            *ext,
        )
    return {p.name: p for p in d.iterdir()}


def server_context(pki: dict[str, Path], name: str) -> ssl.SSLContext:
    """A TLS server context presenting ``<name>.crt``."""
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(pki[f"{name}.crt"], pki[f"{name}.key"])
    return ctx
