"""A small certificate authority for development servers (with ``cryptography``).

``new_ca`` makes a self-signed ECDSA P-256 CA that may sign only end certificates
(``pathlen: 0``); ``issue`` signs an end certificate with it: a serving certificate
(``serverAuth``, with DNS and IP subject alternative names), a client certificate
(``clientAuth``; kube reads the subject's CN as the user and its O values as the groups),
or both. ``write_private_bytes`` writes a key or certificate so that only its owner can
ever read it. Used by the webhook server's certificates and the API server's TLS.

``cryptography`` is imported on first use only: importing this module costs nothing.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from kubewerk.core.atomicfile import replace_file

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric import ec

__all__ = ["KeyPair", "issue", "new_ca", "split_names", "write_private_bytes"]


class KeyPair(NamedTuple):
    """PEM texts of a certificate and its private key (PKCS#8, unencrypted)."""

    cert: bytes
    key: bytes


def split_names(names: Iterable[str]) -> tuple[list[str], list[str]]:
    """``(dns_names, ip_addresses)`` from a mixed list (IP literals recognised, blanks and
    duplicates dropped, order kept)."""
    dns: list[str] = []
    ips: list[str] = []
    for item in names:
        item = item.strip()
        if not item:
            continue
        try:
            ips.append(str(ipaddress.ip_address(item.strip("[]"))))
        except ValueError:
            dns.append(item)
    return list(dict.fromkeys(dns)), list(dict.fromkeys(ips))


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _validity(days: float, not_before: datetime.datetime | None) -> tuple[datetime.datetime, ...]:
    if days <= 0:
        raise ValueError(f"days must be positive, not {days}")
    start = not_before or datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=1)
    return start, start + datetime.timedelta(days=days)


def new_ca(
    common_name: str, *, days: float = 365, not_before: datetime.datetime | None = None
) -> KeyPair:
    """A new self-signed CA named ``common_name``, valid from a minute ago (or
    ``not_before``) for ``days`` days. ``ValueError`` for a non-positive ``days``."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    start, until = _validity(days, not_before)
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
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
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return KeyPair(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key))


def issue(
    ca: KeyPair,
    common_name: str,
    *,
    organizations: Iterable[str] = (),
    dns_names: Iterable[str] = (),
    ip_addresses: Iterable[str] = (),
    server: bool = False,
    client: bool = False,
    days: float = 365,
    not_before: datetime.datetime | None = None,
) -> KeyPair:
    """An end certificate signed by ``ca`` for ``common_name`` (with one O attribute per
    ``organizations`` entry), usable for ``server`` and/or ``client`` authentication;
    ``dns_names`` and ``ip_addresses`` become its subject alternative names. ``ValueError``
    when neither usage is asked for, for a malformed IP address or a non-positive ``days``."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    if not (server or client):
        raise ValueError("a certificate must be for server or client authentication")
    start, until = _validity(days, not_before)
    ca_cert = x509.load_pem_x509_certificate(ca.cert)
    ca_key = serialization.load_pem_private_key(ca.key, password=None)
    if not isinstance(ca_key, ec.EllipticCurvePrivateKey):
        raise ValueError("the CA key must be an ECDSA key")
    key = ec.generate_private_key(ec.SECP256R1())
    attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations]
    attributes.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
    usages = ([ExtendedKeyUsageOID.SERVER_AUTH] if server else []) + (
        [ExtendedKeyUsageOID.CLIENT_AUTH] if client else []
    )
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name(attributes))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
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
        .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
    )
    alt: list[x509.GeneralName] = [x509.DNSName(d) for d in dns_names]
    alt += [x509.IPAddress(ipaddress.ip_address(i)) for i in ip_addresses]
    if alt:
        builder = builder.add_extension(x509.SubjectAlternativeName(alt), critical=False)
    cert = builder.sign(ca_key, hashes.SHA256())
    return KeyPair(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key))


def write_private_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` through a new file created 0600 next to it that then
    replaces it in one step (readers see the old file or the whole new one)."""
    target = Path(path)
    replace_file(target, data, 0o600)
    return target
