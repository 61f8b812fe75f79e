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
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from kubewerk.core.pki import issue, new_ca, split_names, write_private_bytes

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
    extra_dns, extra_ips = split_names(extra)
    dns = [f"{service}.{namespace}.svc", f"{service}.{namespace}.svc.cluster.local", "localhost"]
    return (
        list(dict.fromkeys([*dns, *extra_dns])),
        list(dict.fromkeys(["127.0.0.1", "::1", *extra_ips])),
    )


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
    if not service or not namespace:
        raise ValueError("a webhook certificate needs a service name and a namespace")
    if days <= 0:
        raise ValueError(f"days must be positive, not {days}")
    dns, ips = _sans(service, namespace, extra_names)
    ca = new_ca(f"{service}.{namespace} webhook CA", days=days)
    serving = issue(ca, dns[0], dns_names=dns, ip_addresses=ips, server=True, days=days)
    return CertificateSet(
        ca_cert=ca.cert,
        ca_key=ca.key,
        cert=serving.cert,
        key=serving.key,
        dns_names=tuple(dns),
        ip_addresses=tuple(ips),
    )


# file names: cert-manager's / kubebuilder's (tls.crt, tls.key, ca.crt) plus the CA key
FILE_NAMES = {"ca_cert": "ca.crt", "ca_key": "ca.key", "cert": "tls.crt", "key": "tls.key"}


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
        write_private_bytes(paths[role], getattr(certs, role))
    return paths
