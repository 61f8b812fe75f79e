"""Who a request is: kube-apiserver's request authenticators, in kube's order.

``Authenticator.authenticate`` tries, as kube's union authenticator does:

1. the client certificate the TLS handshake verified (against the server's client CAs):
   CN is the user name, each O a group; a certificate without a CN is ignored;
2. a bearer token (``Authorization: Bearer TOKEN``, scheme case-insensitive): the static
   token file, then ServiceAccount tokens. A bearer token no authenticator accepts fails
   the request (401) even when anonymous requests are allowed, as kube's
   ``FailOnError`` union does;
3. with no credentials at all: ``system:anonymous`` in ``system:unauthenticated`` when
   anonymous requests are enabled, else a failure (401).

Every authenticated user other than ``system:anonymous`` gets ``system:authenticated``
added unless it is already in it or in ``system:unauthenticated`` (kube's
``AuthenticatedGroupAdder``). ``None`` means 401; nothing a client sends can make
authentication raise.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kubewerk.apiserver.auth.tokens import ServiceAccountTokens, StaticTokens, TokenReviewResult
from kubewerk.apiserver.auth.types import (
    ALL_AUTHENTICATED,
    ALL_UNAUTHENTICATED,
    ANONYMOUS,
    ANONYMOUS_USER,
    UserInfo,
)

_CERT_CACHE_LIMIT = 256
INVALID_BEARER_TOKEN = "invalid bearer token"
"""kube's bearer-token authenticator's error for a token no token authenticator accepted
and none gave a reason for."""


@dataclass(frozen=True, slots=True)
class AuthenticationConfig:
    """Which authenticators a server runs (kube-apiserver's authentication flags):
    ``tokens`` (``--token-auth-file``), verified client certificates (``--client-ca-file``;
    the TLS layer verifies them), the server's ServiceAccount tokens, and anonymous
    requests (``--anonymous-auth``, off by default here)."""

    tokens: StaticTokens | None = None
    client_certificates: bool = True
    service_account_tokens: bool = True
    anonymous: bool = False


def with_authenticated_group(user: UserInfo) -> UserInfo:
    """``user`` with ``system:authenticated`` added as kube's AuthenticatedGroupAdder does."""
    if user.name == ANONYMOUS_USER:
        return user
    if ALL_AUTHENTICATED in user.groups or ALL_UNAUTHENTICATED in user.groups:
        return user
    return UserInfo(user.name, user.uid, (*user.groups, ALL_AUTHENTICATED), user.extra)


def certificate_user(der: bytes) -> UserInfo | None:
    """The user of a (verified) client certificate in DER: CN the name, O the groups;
    None for a certificate without a CN or that does not parse."""
    from cryptography import x509
    from cryptography.x509.oid import NameOID

    try:
        cert = x509.load_der_x509_certificate(der)
        subject = cert.subject
        names = [str(a.value) for a in subject.get_attributes_for_oid(NameOID.COMMON_NAME)]
        groups = [str(a.value) for a in subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)]
    except (ValueError, TypeError):
        return None
    if not names or not names[0]:
        return None
    return UserInfo(names[0], "", tuple(groups))


class Authenticator:
    """The configured authenticators (see the module doc). ``client_certificates``:
    whether a verified client certificate authenticates (the TLS layer verified it
    against the client CAs; without TLS there is none)."""

    def __init__(
        self,
        *,
        tokens: StaticTokens | None = None,
        service_accounts: ServiceAccountTokens | None = None,
        client_certificates: bool = True,
        anonymous: bool = False,
    ) -> None:
        self.tokens = tokens
        # the users of static tokens, with system:authenticated added once
        self._static = (
            {token: with_authenticated_group(user) for token, user in tokens.users.items()}
            if tokens is not None
            else {}
        )
        self.service_accounts = service_accounts
        self.client_certificates = client_certificates
        self.anonymous = anonymous
        self._cert_users: dict[bytes, UserInfo | None] = {}

    def authenticate(
        self, authorization: str | None, peer_certificate: bytes | None
    ) -> UserInfo | None:
        """The user of a request with this ``Authorization`` header value and verified
        client certificate (DER), or None for 401."""
        if peer_certificate is not None and self.client_certificates:
            user = self._certificate_user(peer_certificate)
            if user is not None:
                return user
        token = bearer_token(authorization)
        if token is not None:
            return self._token_user(token)
        return ANONYMOUS if self.anonymous else None

    def _certificate_user(self, der: bytes) -> UserInfo | None:
        cache = self._cert_users
        if der in cache:
            return cache[der]
        user = certificate_user(der)
        if user is not None:
            user = with_authenticated_group(user)
        if len(cache) >= _CERT_CACHE_LIMIT:
            cache.clear()
        cache[der] = user
        return user

    def _token_user(self, token: str) -> UserInfo | None:
        user = self._static.get(token)
        if user is not None:
            return user
        if self.service_accounts is not None:
            user = self.service_accounts.authenticate(token)
            if user is not None:
                return with_authenticated_group(user)
        return None

    def review_token(
        self, token: str, audiences: Sequence[str], api_audiences: Sequence[str]
    ) -> TokenReviewResult:
        """Who ``token`` is for ``audiences``, as kube's token authenticators answer a
        ``TokenReview``: a static token is audience-agnostic, so it is accepted only when
        ``audiences`` include one of the server's ``api_audiences`` (and is accepted for
        those); a ServiceAccount token for the audiences it carries among ``audiences``.
        A token no authenticator accepts gets the authenticator's error, else kube's
        bearer-token ``invalid bearer token``."""
        agnostic = tuple(a for a in api_audiences if a in audiences)
        user = self._static.get(token)
        if user is not None and agnostic:
            return TokenReviewResult(user, agnostic)
        if self.service_accounts is not None:
            result = self.service_accounts.review(token, audiences)
            if result.user is not None:
                return TokenReviewResult(with_authenticated_group(result.user), result.audiences)
            if result.error:
                return result
        return TokenReviewResult(None, error=INVALID_BEARER_TOKEN)


def bearer_token(authorization: str | None) -> str | None:
    """The token of ``Authorization: Bearer TOKEN`` (kube's reading: trimmed, split on
    single spaces, scheme case-insensitive); None when there is none."""
    if not authorization:
        return None
    parts = authorization.strip().split(" ", 2)
    if len(parts) < 2 or parts[0].lower() != "bearer" or not parts[1]:
        return None
    return parts[1]


def header(headers: Sequence[tuple[bytes, bytes]], name: bytes) -> str | None:
    """The first value of header ``name`` (lower-case) in ASGI headers, as latin-1 text."""
    for key, value in headers:
        if key == name:
            return value.decode("latin-1")
    return None


def peer_certificate(scope: dict[str, Any]) -> bytes | None:
    """The verified client certificate (DER) the server put in the ASGI scope's ``tls``
    extension (``client_cert_der``), or None."""
    extensions = scope.get("extensions")
    if not extensions:
        return None
    tls = extensions.get("tls")
    if not tls:
        return None
    der = tls.get("client_cert_der")
    return der if isinstance(der, bytes) else None
