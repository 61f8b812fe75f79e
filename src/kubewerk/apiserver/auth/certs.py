"""The API server's TLS material: a CA, the serving certificate, the admin client
certificate and the ServiceAccount signing key, kept in one private directory.

``ServerPki.ensure(directory, hosts)`` reuses what the directory holds and creates what
is missing, as kubeadm lays it out (one CA signs the serving certificate and client
certificates; the same CA is the client CA):

- ``ca.crt``/``ca.key``: the CA (ECDSA P-256, 10 years);
- ``apiserver.crt``/``apiserver.key``: the serving certificate (1 year) for
  ``localhost``, ``kubernetes``, ``kubernetes.default``, ``kubernetes.default.svc``,
  ``kubernetes.default.svc.cluster.local``, ``127.0.0.1``, ``::1`` and ``hosts``; made
  again when it expires within a day or lacks one of those names;
- ``admin.crt``/``admin.key``: a client certificate for user ``kubewerk-admin`` in group
  ``system:masters`` (1 year; made again when it expires within a day);
- ``sa.key``: the RSA key signing ServiceAccount tokens.

The directory is created 0700, every file 0600. ``ServerPki.given(cert_file, key_file)``
takes a serving certificate from files instead (the kubeconfig then trusts that file's
certificates).
"""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from kubewerk.apiserver.auth.tokens import SigningKey
from kubewerk.apiserver.auth.types import SYSTEM_MASTERS
from kubewerk.core.pki import KeyPair, issue, new_ca, split_names, write_private_bytes

ADMIN_USER = "kubewerk-admin"
DEFAULT_NAMES = (
    "localhost",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
    "127.0.0.1",
    "::1",
)
CA_DAYS = 3650
LEAF_DAYS = 365
_RENEW_BEFORE = datetime.timedelta(days=1)


def pki_directory_for(store_path: str) -> Path:
    """Where a store at ``store_path`` (a SQLite file) keeps its TLS material:
    ``PATH.pki`` beside it."""
    path = Path(store_path).expanduser()
    return path.with_name(path.name + ".pki")


@dataclass(frozen=True)
class ServerPki:
    """Paths (and PEM texts) of the server's TLS material; ``ca``/``admin`` are None
    when the serving certificate was given as files."""

    cert_file: Path
    key_file: Path
    ca_pem: bytes
    """What a kubeconfig's ``certificate-authority-data`` carries."""
    ca: KeyPair | None = None
    ca_file: Path | None = None
    admin: KeyPair | None = None
    directory: Path | None = None

    @classmethod
    def given(cls, cert_file: str | Path, key_file: str | Path) -> ServerPki:
        """A serving certificate from files (PEM; the certificate file may hold the chain).
        ``ValueError`` says what is wrong with them, ``OSError`` when unreadable."""
        cert_path, key_path = Path(cert_file).expanduser(), Path(key_file).expanduser()
        pem = cert_path.read_bytes()
        _check_pair(pem, key_path.read_bytes(), str(cert_path), str(key_path))
        return cls(cert_path, key_path, pem)

    @classmethod
    def ensure(cls, directory: str | Path, hosts: Iterable[str] = ()) -> ServerPki:
        """The material in ``directory``, created or renewed as the module doc says."""
        out = Path(directory).expanduser()
        if not out.exists():
            out.mkdir(mode=0o700, parents=True)
        elif not out.is_dir():
            raise NotADirectoryError(f"{out} is not a directory")
        ca = _load_pair(out / "ca.crt", out / "ca.key")
        if ca is None or _expires_soon(ca.cert):
            ca = new_ca("kubewerk-ca", days=CA_DAYS)
            _write_pair(out / "ca.crt", out / "ca.key", ca)
            for stale in ("apiserver", "admin"):
                with contextlib.suppress(FileNotFoundError):
                    (out / f"{stale}.crt").unlink()
        dns, ips = split_names([*DEFAULT_NAMES, *hosts])
        serving = _load_pair(out / "apiserver.crt", out / "apiserver.key")
        if (
            serving is None
            or _expires_soon(serving.cert)
            or not _covers(serving.cert, dns, ips)
            or not _signed_by(serving.cert, ca.cert)
        ):
            serving = issue(
                ca, "kube-apiserver", dns_names=dns, ip_addresses=ips, server=True, days=LEAF_DAYS
            )
            _write_pair(out / "apiserver.crt", out / "apiserver.key", serving)
        admin = _load_pair(out / "admin.crt", out / "admin.key")
        if admin is None or _expires_soon(admin.cert) or not _signed_by(admin.cert, ca.cert):
            admin = issue(
                ca, ADMIN_USER, organizations=[SYSTEM_MASTERS], client=True, days=LEAF_DAYS
            )
            _write_pair(out / "admin.crt", out / "admin.key", admin)
        return cls(
            out / "apiserver.crt",
            out / "apiserver.key",
            ca.cert,
            ca,
            out / "ca.crt",
            admin,
            out,
        )

    def signing_key(self) -> SigningKey:
        """The ServiceAccount signing key (``sa.key``), created on first use; a fresh
        in-memory key when the material came from files."""
        if self.directory is None:
            return SigningKey.generate()
        path = self.directory / "sa.key"
        if path.exists():
            return SigningKey(path.read_bytes())
        key = SigningKey.generate()
        write_private_bytes(path, key.pem)
        return key

    def client_certificate(self, user: str, groups: Iterable[str] = (), days: float = 1) -> KeyPair:
        """A new client certificate for ``user`` in ``groups`` signed by this CA (tests,
        extra kubeconfigs). ``ValueError`` when the CA is not this server's own."""
        if self.ca is None:
            raise ValueError("the serving certificate was given as files: there is no CA to sign")
        return issue(self.ca, user, organizations=list(groups), client=True, days=days)


def _write_pair(cert_path: Path, key_path: Path, pair: KeyPair) -> None:
    write_private_bytes(key_path, pair.key)
    write_private_bytes(cert_path, pair.cert)


def _load_pair(cert_path: Path, key_path: Path) -> KeyPair | None:
    try:
        cert, key = cert_path.read_bytes(), key_path.read_bytes()
        _check_pair(cert, key, str(cert_path), str(key_path))
    except (OSError, ValueError):
        return None
    return KeyPair(cert, key)


def _check_pair(cert_pem: bytes, key_pem: bytes, cert_name: str, key_name: str) -> None:
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    try:
        cert = x509.load_pem_x509_certificate(cert_pem)
    except ValueError:
        raise ValueError(f"{cert_name} holds no PEM certificate") from None
    try:
        key = serialization.load_pem_private_key(key_pem, password=None)
    except (ValueError, TypeError):
        raise ValueError(f"{key_name} holds no unencrypted PEM private key") from None
    der = serialization.Encoding.DER
    spki = serialization.PublicFormat.SubjectPublicKeyInfo
    if cert.public_key().public_bytes(der, spki) != key.public_key().public_bytes(der, spki):
        raise ValueError(
            f"the private key in {key_name} does not match the certificate in {cert_name}"
        )


def _expires_soon(cert_pem: bytes) -> bool:
    from cryptography import x509

    cert = x509.load_pem_x509_certificate(cert_pem)
    return cert.not_valid_after_utc - _RENEW_BEFORE < datetime.datetime.now(datetime.UTC)


def _covers(cert_pem: bytes, dns: list[str], ips: list[str]) -> bool:
    from cryptography import x509

    cert = x509.load_pem_x509_certificate(cert_pem)
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return False
    have_dns = set(san.get_values_for_type(x509.DNSName))
    have_ips = set(san.get_values_for_type(x509.IPAddress))
    return set(dns) <= have_dns and {ipaddress.ip_address(i) for i in ips} <= have_ips


def _signed_by(cert_pem: bytes, ca_pem: bytes) -> bool:
    from cryptography import x509

    cert = x509.load_pem_x509_certificate(cert_pem)
    ca = x509.load_pem_x509_certificate(ca_pem)
    try:
        cert.verify_directly_issued_by(ca)
    except (ValueError, TypeError, Exception):
        return False
    return True
