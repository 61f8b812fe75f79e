"""Go's ``tls.X509KeyPair`` verdict on a ``kubernetes.io/tls`` Secret's ``tls.crt`` and
``tls.key``: kube-apiserver's Secret strategy (pkg/registry/core/secret/strategy.go
``warningsForSecret``) answers a create or update of such a Secret whose pair does not
load with the error's text as a warning (the write itself succeeds).

The texts are crypto/tls's: ``tls: failed to find any PEM data in certificate input``,
``tls: failed to find "CERTIFICATE" PEM block in certificate input after skipping PEM
blocks of the following types: [RSA PRIVATE KEY]``, the same for the key input, ``tls:
found a certificate rather than a key in the PEM for the private key``, ``tls: failed to
parse private key``, ``tls: private key type does not match public key type``, ``tls:
private key does not match public key``.

PEM blocks are read as ``encoding/pem``'s ``Decode`` reads them: a ``-----BEGIN TYPE-----``
line (at the start or after a newline), optional ``Key: value`` header lines, a base64
body (spaces and tabs ignored), and a matching ``-----END TYPE-----`` line; a block that
does not parse is skipped. Not reproduced: the many texts of Go's ``x509.ParseCertificate``
for a certificate block that is not DER (here always ``x509: malformed certificate``).
"""

from __future__ import annotations

import binascii
from typing import Any, Final

__all__ = ["pem_blocks", "x509_key_pair_error"]

_BEGIN: Final = b"-----BEGIN "
_END: Final = b"-----END "
_DASHES: Final = b"-----"


def _line(data: bytes) -> tuple[bytes, bytes]:
    """``data``'s first line (CR before the newline and trailing blanks dropped) and the
    rest after the newline."""
    i = data.find(b"\n")
    if i < 0:
        return data.rstrip(b" \t"), b""
    line = data[: i - 1] if i > 0 and data[i - 1 : i] == b"\r" else data[:i]
    return line.rstrip(b" \t"), data[i + 1 :]


def _next_block(data: bytes) -> tuple[str, bytes, bytes] | None:
    """The first PEM block of ``data`` that parses: (type, decoded body, what follows);
    None when there is none."""
    rest = data
    while True:
        if rest.startswith(_BEGIN):
            rest = rest[len(_BEGIN) :]
        else:
            at = rest.find(b"\n" + _BEGIN)
            if at < 0:
                return None
            rest = rest[at + 1 + len(_BEGIN) :]
        type_line, rest = _line(rest)
        if not type_line.endswith(_DASHES):
            continue
        block_type = type_line[: -len(_DASHES)]
        headers = False
        while rest:
            line, after = _line(rest)
            if b":" not in line:
                break
            headers, rest = True, after
        if not rest:
            return None
        if not headers and rest.startswith(_END):
            end, trailer_at = 0, len(_END)
        else:
            end = rest.find(b"\n" + _END)
            trailer_at = end + 1 + len(_END)
        if end < 0:
            continue
        trailer = rest[trailer_at:]
        want = block_type + _DASHES
        if not trailer.startswith(want) or _line(trailer[len(want) :])[0]:
            continue
        body = rest[:end].replace(b" ", b"").replace(b"\t", b"")
        body = body.replace(b"\r", b"").replace(b"\n", b"")
        try:
            decoded = binascii.a2b_base64(body, strict_mode=True)
        except binascii.Error:
            continue
        after_end = _line(rest[trailer_at + len(want) :])[1]
        return block_type.decode("latin-1"), decoded, after_end


def pem_blocks(data: bytes) -> list[tuple[str, bytes]]:
    """Every PEM block of ``data`` that parses, in order: (type, DER bytes)."""
    out = []
    found = _next_block(data)
    while found is not None:
        out.append(found[:2])
        found = _next_block(found[2])
    return out


def _go_list(types: list[str]) -> str:
    return "[" + " ".join(types) + "]"


def _load_key(der: bytes) -> Any:
    from cryptography.hazmat.primitives.serialization import load_der_private_key

    try:
        return load_der_private_key(der, password=None)
    except (ValueError, TypeError):
        return None


def _mismatch(public: Any, private: Any) -> str | None:
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

    if isinstance(public, rsa.RSAPublicKey):
        if not isinstance(private, rsa.RSAPrivateKey):
            return "tls: private key type does not match public key type"
        if public.public_numbers().n != private.public_key().public_numbers().n:
            return "tls: private key does not match public key"
        return None
    if isinstance(public, ec.EllipticCurvePublicKey):
        if not isinstance(private, ec.EllipticCurvePrivateKey):
            return "tls: private key type does not match public key type"
        mine, theirs = public.public_numbers(), private.public_key().public_numbers()
        if (mine.x, mine.y) != (theirs.x, theirs.y):
            return "tls: private key does not match public key"
        return None
    if isinstance(public, ed25519.Ed25519PublicKey):
        if not isinstance(private, ed25519.Ed25519PrivateKey):
            return "tls: private key type does not match public key type"
        if public.public_bytes_raw() != private.public_key().public_bytes_raw():
            return "tls: private key does not match public key"
        return None
    return "tls: unknown public key algorithm"


def x509_key_pair_error(cert_pem: bytes, key_pem: bytes) -> str | None:
    """The error ``tls.X509KeyPair(cert_pem, key_pem)`` returns (None: the pair loads)."""
    certs, skipped = [], []
    for block_type, der in pem_blocks(cert_pem):
        if block_type == "CERTIFICATE":
            certs.append(der)
        else:
            skipped.append(block_type)
    if not certs:
        if not skipped:
            return "tls: failed to find any PEM data in certificate input"
        if len(skipped) == 1 and skipped[0].endswith("PRIVATE KEY"):
            return (
                "tls: failed to find certificate PEM data in certificate input, but did find "
                "a private key; PEM inputs may have been switched"
            )
        return (
            'tls: failed to find "CERTIFICATE" PEM block in certificate input after skipping '
            f"PEM blocks of the following types: {_go_list(skipped)}"
        )
    key_der, skipped = None, []
    for block_type, der in pem_blocks(key_pem):
        if block_type == "PRIVATE KEY" or block_type.endswith(" PRIVATE KEY"):
            key_der = der
            break
        skipped.append(block_type)
    if key_der is None:
        if not skipped:
            return "tls: failed to find any PEM data in key input"
        if skipped == ["CERTIFICATE"]:
            return "tls: found a certificate rather than a key in the PEM for the private key"
        return (
            'tls: failed to find PEM block with type ending in "PRIVATE KEY" in key input '
            f"after skipping PEM blocks of the following types: {_go_list(skipped)}"
        )
    from cryptography import x509

    try:
        public = x509.load_der_x509_certificate(certs[0]).public_key()
    except ValueError:
        return "x509: malformed certificate"
    private = _load_key(key_der)
    if private is None:
        return "tls: failed to parse private key"
    return _mismatch(public, private)
