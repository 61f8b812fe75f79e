"""Bearer tokens: kube's static token file and ServiceAccount JWTs.

``StaticTokens`` reads ``--token-auth-file`` (kube's CSV: ``token,user,uid[,"g1,g2"]``,
at least three columns, an empty token skipped, a later duplicate winning).

``ServiceAccountTokens`` issues and validates ServiceAccount tokens as kube-apiserver's
``TokenRequest`` does: RS256 JWTs signed with a key kept beside the store, claims ``iss``,
``sub`` (``system:serviceaccount:NS:NAME``), ``aud``, ``exp``, ``iat``, ``nbf``, ``jti``
and ``kubernetes.io`` (namespace, serviceaccount name and uid, and the bound pod or
secret). A token is accepted only with a valid signature by this server's key, the
server's issuer, an audience the server accepts, ``exp``/``nbf`` holding (60 s leeway,
as kube's validator allows), and a ServiceAccount of that namespace, name and uid still
stored (plus the bound object, when there is one). Every refusal is ``None``; nothing in a
token can make validation raise. ``ServiceAccountTokens.review`` checks a token for other
audiences (a ``TokenReview``'s) and names an audience mismatch with kube's message.
"""

from __future__ import annotations

import base64
import binascii
import csv
import io
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from kubewerk.apiserver.auth.types import (
    SERVICE_ACCOUNT_PREFIX,
    SERVICE_ACCOUNTS_GROUP,
    UserInfo,
)
from kubewerk.core.gofmt import go_quote

JSON = dict[str, Any]

DEFAULT_ISSUER = "https://kubernetes.default.svc.cluster.local"
"""The issuer (and default audience) of ServiceAccount tokens, as kind and kubeadm set
``--service-account-issuer``."""
LEEWAY_SECONDS = 60
"""Clock skew tolerated on ``exp`` and ``nbf`` (kube's ServiceAccount JWT validator)."""
MAX_TOKEN_BYTES = 16 * 1024
"""A longer bearer token is refused unread (the 1 MiB header limit still applies first)."""
CREDENTIAL_ID_KEY = "authentication.kubernetes.io/credential-id"

ObjectLookup = Callable[[str, str, str], JSON | None]
"""``(resource, namespace, name)`` → the stored object (``serviceaccounts``, ``pods``,
``secrets``), or None."""


class TokenFileError(ValueError):
    """A token file kube-apiserver would refuse to start with."""


@dataclass(frozen=True, slots=True)
class StaticTokens:
    """Users by token from a static token file."""

    users: dict[str, UserInfo]

    @classmethod
    def load(cls, path: str | Path) -> StaticTokens:
        """Read kube's CSV token file. Raises ``TokenFileError`` (kube's words) for a
        record with fewer than three columns, ``OSError`` for an unreadable file."""
        text = Path(path).expanduser().read_text(encoding="utf-8-sig")
        return cls.parse(text, str(path))

    @classmethod
    def parse(cls, text: str, name: str = "<tokens>") -> StaticTokens:
        """Parse the CSV text of a token file (see ``load``)."""
        users: dict[str, UserInfo] = {}
        reader = csv.reader(io.StringIO(text), skipinitialspace=True)
        try:
            for record in reader:
                if not record:
                    continue
                if len(record) < 3:
                    raise TokenFileError(
                        f"token file '{name}' must have at least 3 columns (token, user name, "
                        f"user uid), found {len(record)}"
                    )
                token = record[0]
                if not token:
                    continue  # kube warns and skips a record with an empty token
                groups = tuple(record[3].split(",")) if len(record) >= 4 else ()
                users[token] = UserInfo(record[1], record[2], groups)
        except csv.Error as exc:
            raise TokenFileError(f"token file '{name}': {exc}") from None
        return cls(users)

    def authenticate(self, token: str) -> UserInfo | None:
        """The user of ``token``, or None."""
        return self.users.get(token)


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64url(text: str) -> bytes:
    if not text.isascii():
        raise ValueError("not base64url")
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class SigningKey:
    """An RSA key signing ServiceAccount tokens (PEM PKCS#8), with its ``kid`` as kube
    derives it (the unpadded base64url SHA-256 of the public key's DER)."""

    def __init__(self, pem: bytes) -> None:
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import rsa

        key = serialization.load_pem_private_key(pem, password=None)
        if not isinstance(key, rsa.RSAPrivateKey):
            raise ValueError("the service account signing key must be an RSA private key")
        self.pem = pem
        self._key = key
        self._public = key.public_key()
        der = self._public.public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        digest = hashes.Hash(hashes.SHA256())
        digest.update(der)
        self.kid = _b64url(digest.finalize())

    @classmethod
    def generate(cls) -> SigningKey:
        """A new 2048-bit RSA key."""
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import rsa

        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        return cls(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )

    def sign(self, data: bytes) -> bytes:
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import padding

        return self._key.sign(data, padding.PKCS1v15(), hashes.SHA256())

    def verify(self, signature: bytes, data: bytes) -> bool:
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import padding

        try:
            self._public.verify(signature, data, padding.PKCS1v15(), hashes.SHA256())
        except (InvalidSignature, ValueError):
            return False
        return True


def service_account_user(
    namespace: str, name: str, uid: str, extra: dict[str, tuple[str, ...]] | None = None
) -> UserInfo:
    """The user a ServiceAccount token authenticates as (without ``system:authenticated``,
    which authentication adds for every user)."""
    return UserInfo(
        f"{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}",
        uid,
        (SERVICE_ACCOUNTS_GROUP, f"{SERVICE_ACCOUNTS_GROUP}:{namespace}"),
        extra or {},
    )


def split_service_account_user(username: str) -> tuple[str, str] | None:
    """``(namespace, name)`` of ``system:serviceaccount:NS:NAME``, or None (kube's
    ``serviceaccount.SplitUsername``: exactly two non-empty parts)."""
    if not username.startswith(SERVICE_ACCOUNT_PREFIX):
        return None
    parts = username[len(SERVICE_ACCOUNT_PREFIX) :].split(":")
    if len(parts) != 2 or not parts[0] or not parts[1]:
        return None
    return parts[0], parts[1]


def go_quoted(values: Iterable[str]) -> str:
    """Go's ``%q`` of a ``[]string``: ``["a" "b"]``."""
    return "[" + " ".join(go_quote(v) for v in values) + "]"


@dataclass(frozen=True, slots=True)
class TokenReviewResult:
    """What an authenticator made of a bearer token for a set of audiences: ``user``
    (None: not authenticated), the ``audiences`` it was accepted for, and ``error``,
    kube's message when the authenticator gave one (empty otherwise)."""

    user: UserInfo | None
    audiences: tuple[str, ...] = ()
    error: str = ""


class ServiceAccountTokens:
    """Issues (``issue``) and validates (``authenticate``) ServiceAccount JWTs.

    ``key`` is a ``SigningKey`` or a callable producing one on first use (so a server that
    never issues a token never generates a key). ``lookup`` reads stored objects.
    ``audiences`` are the API audiences accepted on use (default: ``[issuer]``).
    """

    def __init__(
        self,
        key: SigningKey | Callable[[], SigningKey],
        lookup: ObjectLookup,
        *,
        issuer: str = DEFAULT_ISSUER,
        audiences: Sequence[str] = (),
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._key = key if isinstance(key, SigningKey) else None
        self._make_key = None if isinstance(key, SigningKey) else key
        self.lookup = lookup
        self.issuer = issuer
        self.audiences = tuple(audiences) or (issuer,)
        self.clock = clock

    @property
    def key(self) -> SigningKey:
        if self._key is None:
            assert self._make_key is not None
            self._key = self._make_key()
        return self._key

    def issue(
        self,
        service_account: JSON,
        audiences: Iterable[str],
        expiration_seconds: int,
        bound: tuple[str, JSON] | None = None,
    ) -> tuple[str, int]:
        """A signed token for ``service_account`` (a stored object) and its ``exp``
        (Unix seconds). ``bound`` is ``("Pod"|"Secret", object)`` the token is bound to."""
        meta = service_account.get("metadata") or {}
        namespace, name, uid = meta.get("namespace", ""), meta.get("name", ""), meta.get("uid", "")
        now = int(self.clock())
        exp = now + int(expiration_seconds)
        private: JSON = {
            "namespace": namespace,
            "serviceaccount": {"name": name, "uid": uid},
        }
        if bound is not None:
            kind, obj = bound
            bmeta = obj.get("metadata") or {}
            private[kind.lower()] = {"name": bmeta.get("name", ""), "uid": bmeta.get("uid", "")}
        claims: JSON = {
            "aud": list(audiences),
            "exp": exp,
            "iat": now,
            "iss": self.issuer,
            "jti": str(uuid.uuid4()),
            "kubernetes.io": private,
            "nbf": now,
            "sub": f"{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}",
        }
        key = self.key
        header = _b64url(orjson.dumps({"alg": "RS256", "kid": key.kid}))
        payload = _b64url(orjson.dumps(claims))
        signing_input = f"{header}.{payload}".encode("ascii")
        return f"{header}.{payload}.{_b64url(key.sign(signing_input))}", exp

    def authenticate(self, token: str) -> UserInfo | None:
        """The ServiceAccount user of a valid token, else None (see the module doc)."""
        return self.review(token, self.audiences).user

    def review(self, token: str, audiences: Sequence[str]) -> TokenReviewResult:
        """``token`` checked as kube's ServiceAccount JWT authenticator checks it for
        ``audiences`` (a request to the API: the server's own; a ``TokenReview``: its
        ``spec.audiences``): the user and the token's audiences among ``audiences``;
        ``error`` is kube's message for a token of this server whose audiences are
        none of them, else empty (every other refusal is silent, see the module doc)."""
        refused = TokenReviewResult(None)
        if len(token) > MAX_TOKEN_BYTES or token.count(".") != 2:
            return refused
        header_b64, payload_b64, signature_b64 = token.split(".")
        try:
            header = orjson.loads(_unb64url(header_b64))
            claims = orjson.loads(_unb64url(payload_b64))
            signature = _unb64url(signature_b64)
        except (ValueError, binascii.Error, orjson.JSONDecodeError):
            return refused
        if not isinstance(header, dict) or not isinstance(claims, dict):
            return refused
        if header.get("alg") != "RS256" or claims.get("iss") != self.issuer:
            return refused
        if self._key is None and self._make_key is not None:
            return refused  # no key yet: this server has issued no token
        if not self.key.verify(signature, f"{header_b64}.{payload_b64}".encode("ascii")):
            return refused
        return self._validate_claims(claims, audiences)

    def _validate_claims(self, claims: JSON, wanted: Sequence[str]) -> TokenReviewResult:
        refused = TokenReviewResult(None)
        now = self.clock()
        exp, nbf = claims.get("exp"), claims.get("nbf", 0)
        if not isinstance(exp, int | float) or not isinstance(nbf, int | float):
            return refused
        if isinstance(exp, bool) or isinstance(nbf, bool):
            return refused
        if now > exp + LEEWAY_SECONDS or now < nbf - LEEWAY_SECONDS:
            return refused
        aud = claims.get("aud")
        auds = [aud] if isinstance(aud, str) else aud
        if not isinstance(auds, list) or not all(isinstance(a, str) for a in auds):
            return refused
        matched = tuple(a for a in auds if a in wanted)
        if not matched:
            return TokenReviewResult(
                None,
                error=f"token audiences {go_quoted(auds)} is invalid for the target "
                f"audiences {go_quoted(wanted)}",
            )
        user = self._private_claims_user(claims)
        return TokenReviewResult(user, matched if user is not None else ())

    def _private_claims_user(self, claims: JSON) -> UserInfo | None:
        private = claims.get("kubernetes.io")
        if not isinstance(private, dict):
            return None
        namespace = private.get("namespace")
        account = private.get("serviceaccount")
        if not isinstance(namespace, str) or not isinstance(account, dict):
            return None
        name, uid = account.get("name"), account.get("uid")
        if not isinstance(name, str) or not isinstance(uid, str):
            return None
        if claims.get("sub") != f"{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}":
            return None
        stored = self.lookup("serviceaccounts", namespace, name)
        if stored is None or (stored.get("metadata") or {}).get("uid") != uid:
            return None
        if stored["metadata"].get("deletionTimestamp"):
            return None
        extra: dict[str, tuple[str, ...]] = {}
        for kind, resource in (("pod", "pods"), ("secret", "secrets")):
            ref = private.get(kind)
            if ref is None:
                continue
            if not isinstance(ref, dict):
                return None
            obj = self.lookup(resource, namespace, str(ref.get("name", "")))
            if obj is None or (obj.get("metadata") or {}).get("uid") != ref.get("uid"):
                return None
            if obj["metadata"].get("deletionTimestamp"):
                return None
            if kind == "pod":
                extra["authentication.kubernetes.io/pod-name"] = (str(ref.get("name")),)
                extra["authentication.kubernetes.io/pod-uid"] = (str(ref.get("uid")),)
        jti = claims.get("jti")
        if isinstance(jti, str) and jti:
            extra[CREDENTIAL_ID_KEY] = (f"JTI={jti}",)
        return service_account_user(namespace, name, uid, extra)
