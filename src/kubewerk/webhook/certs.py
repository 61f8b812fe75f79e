"""Development certificates for a webhook: a CA and a serving certificate signed by it.

:func:`make_certificates` creates (with the ``cryptography`` package) an ECDSA P-256
CA and a serving certificate whose subject alternative names are everything
kube-apiserver or a local test may dial: ``NAME.NS.svc``,
``NAME.NS.svc.cluster.local``, ``localhost``, ``127.0.0.1`` and ``::1``, plus any extra
DNS names or IP addresses. The serving certificate is for server authentication only
(``extendedKeyUsage: serverAuth``), the CA may sign only end certificates
(``pathlen: 0``). :func:`write_certificates` writes them as PEM files created 0600 (their
directory 0700 when it is new) and the ``caBundle`` is the base64 of the CA's PEM, which
is what a webhook configuration's ``clientConfig.caBundle`` (or a CRD's
``conversion.webhook.clientConfig.caBundle``) takes.
"""

from __future__ import annotations

import base64
import contextlib
import datetime
import ipaddress
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CertificateSet", "make_certificates", "write_certificates"]


@dataclass(frozen=True)
class CertificateSet:
    """PEM texts of a CA and a serving certificate with its key."""

    ca_cert: bytes
    ca_key: bytes
    cert: bytes
    key: bytes
    dns_names: tuple[str, ...]
    ip_addresses: tuple[str, ...]

    @property
    def ca_bundle(self) -> str:
        """The CA certificate as ``caBundle`` takes it (base64 of the PEM)."""
        return base64.b64encode(self.ca_cert).decode("ascii")


def _sans(service: str, namespace: str, extra: Iterable[str]) -> tuple[list[str], list[str]]:
    dns = [f"{service}.{namespace}.svc", f"{service}.{namespace}.svc.cluster.local", "localhost"]
    ips = ["127.0.0.1", "::1"]
    for item in extra:
        item = item.strip()
        if not item:
            continue
        try:
            ips.append(str(ipaddress.ip_address(item)))
        except ValueError:
            dns.append(item)
    return list(dict.fromkeys(dns)), list(dict.fromkeys(ips))


def make_certificates(
    service: str,
    namespace: str,
    *,
    days: int = 365,
    extra_names: Iterable[str] = (),
) -> CertificateSet:
    """A new CA and serving certificate for service ``service`` in ``namespace``, valid
    from a minute ago for ``days`` days; ``extra_names`` are more SANs (IP addresses
    are recognised as such). Raises ``ValueError`` for an empty service or namespace
    or a non-positive ``days``."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    if not service or not namespace:
        raise ValueError("a webhook certificate needs a service name and a namespace")
    if days <= 0:
        raise ValueError(f"days must be positive, not {days}")
    dns, ips = _sans(service, namespace, extra_names)
    now = datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=1)
    until = now + datetime.timedelta(days=days)

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name(
        [x509.NameAttribute(NameOID.COMMON_NAME, f"{service}.{namespace} webhook CA")]
    )
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(until)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(
            x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )

    key = ec.generate_private_key(ec.SECP256R1())
    alt_names: list[x509.GeneralName] = [x509.DNSName(d) for d in dns]
    alt_names += [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, dns[0])]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(until)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )

    def key_pem(k: ec.EllipticCurvePrivateKey) -> bytes:
        return k.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )

    return CertificateSet(
        ca_cert=ca_cert.public_bytes(serialization.Encoding.PEM),
        ca_key=key_pem(ca_key),
        cert=cert.public_bytes(serialization.Encoding.PEM),
        key=key_pem(key),
        dns_names=tuple(dns),
        ip_addresses=tuple(ips),
    )


# file names: cert-manager's / kubebuilder's (tls.crt, tls.key, ca.crt) plus the CA key
FILE_NAMES = {"ca_cert": "ca.crt", "ca_key": "ca.key", "cert": "tls.crt", "key": "tls.key"}


def _write_private(path: Path, data: bytes) -> None:
    """``data`` into a new file created 0600 next to ``path`` that then replaces it."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        with os.fdopen(fd, "wb") as out:
            os.fchmod(out.fileno(), 0o600)
            out.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_certificates(certs: CertificateSet, directory: str | os.PathLike[str]) -> dict[str, Path]:
    """Write ``ca.crt``, ``ca.key``, ``tls.crt`` and ``tls.key`` into ``directory``
    (created 0700 if missing), each file 0600; returns their paths by role. The serving
    pair is written key first, then certificate, each replacing its old file in one step,
    so a reloading server never reads half a file."""
    out = Path(directory).expanduser()
    if not out.exists():
        out.mkdir(mode=0o700, parents=True)
    elif not out.is_dir():
        raise NotADirectoryError(f"{out} is not a directory")
    paths = {role: out / name for role, name in FILE_NAMES.items()}
    for role in ("ca_cert", "ca_key", "key", "cert"):
        _write_private(paths[role], getattr(certs, role))
    return paths
