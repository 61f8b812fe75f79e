"""Bearer tokens: kube's static token file and ServiceAccount JWTs.

``StaticTokens`` reads ``--token-auth-file`` (kube's CSV: ``token,user,uid[,"g1,g2"]``,
at least three columns, an empty token skipped, a later duplicate winning).

``ServiceAccountTokens`` issues and validates ServiceAccount tokens as kube-apiserver
does, RS256 JWTs signed with a key kept beside the store, of two kinds:

- bound tokens (``TokenRequest``): claims ``iss`` (the server's issuer), ``sub``
  (``system:serviceaccount:NS:NAME``), ``aud``, ``exp``, ``iat``, ``nbf``, ``jti`` and
  ``kubernetes.io`` (namespace, serviceaccount name and uid, the bound pod, secret or
  node, and for a pod the node it runs on). Accepted with ``exp``/``nbf``/``iat``
  holding (60 s leeway) and a ServiceAccount of that name and uid stored, plus the bound
  object (a pod's node is reported, not checked); an object deleted less than the
  leeway ago still counts, as in kube's validator;
- legacy tokens (kube-controller-manager's tokens controller puts them in
  ``kubernetes.io/service-account-token`` Secrets): issuer ``kubernetes/serviceaccount``,
  no audience (they stand for the API audiences) and no expiry; accepted while the
  Secret of the token holds exactly it, is not being deleted and is not labelled
  ``kubernetes.io/legacy-token-invalid-since``, and its ServiceAccount stands with the
  uid in the token. A use sets the Secret's ``kubernetes.io/legacy-token-last-used``
  label to the day (through ``mark_used``).

Both need a valid signature by this server's key and an audience the request accepts.
A token that is no JWT of this server is refused silently; every later refusal carries
kube's message (``review``'s ``error``, what a ``TokenReview`` answers). Nothing in a
token can make validation raise.
"""

from __future__ import annotations

import base64
import binascii
import csv
import hmac
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
from kubewerk.core.meta import parse_time

JSON = dict[str, Any]

DEFAULT_ISSUER = "https://kubernetes.default.svc.cluster.local"
"""The issuer (and default audience) of ServiceAccount tokens, as kind and kubeadm set
``--service-account-issuer``."""
LEEWAY_SECONDS = 60
"""Clock skew tolerated on ``exp`` and ``nbf`` (kube's ServiceAccount JWT validator)."""
MAX_TOKEN_BYTES = 16 * 1024
"""A longer bearer token is refused unread (the 1 MiB header limit still applies first)."""
CREDENTIAL_ID_KEY = "authentication.kubernetes.io/credential-id"
POD_NAME_KEY = "authentication.kubernetes.io/pod-name"
POD_UID_KEY = "authentication.kubernetes.io/pod-uid"
NODE_NAME_KEY = "authentication.kubernetes.io/node-name"
NODE_UID_KEY = "authentication.kubernetes.io/node-uid"

LEGACY_ISSUER = "kubernetes/serviceaccount"
"""The issuer of the legacy tokens kept in ``kubernetes.io/service-account-token``
Secrets (kube's ``serviceaccount.LegacyIssuer``)."""
LEGACY_NAMESPACE = "kubernetes.io/serviceaccount/namespace"
LEGACY_SECRET_NAME = "kubernetes.io/serviceaccount/secret.name"
LEGACY_SA_NAME = "kubernetes.io/serviceaccount/service-account.name"
LEGACY_SA_UID = "kubernetes.io/serviceaccount/service-account.uid"
SECRET_TOKEN_KEY = "token"
"""The ``data`` key of a token Secret holding its token (``v1.ServiceAccountTokenKey``)."""
LAST_USED_LABEL = "kubernetes.io/legacy-token-last-used"
"""The label kube-apiserver sets on a token Secret to the day (UTC) its token was used."""
INVALID_SINCE_LABEL = "kubernetes.io/legacy-token-invalid-since"
"""A token Secret with this label (any non-empty value) has its token refused."""

ObjectLookup = Callable[[str, str, str], JSON | None]
"""``(resource, namespace, name)`` → the stored object (``serviceaccounts``, ``pods``,
``secrets``, ``nodes`` with namespace ``""``), or None."""
UsedMarker = Callable[[JSON, str], None]
"""``(secret, day)``: record that the legacy token of ``secret`` was used on ``day``
(``YYYY-MM-DD``, UTC)."""


class TokenFileError(ValueError):
    """A token file kube-apiserver would refuse to start with."""


@dataclass(frozen=True, slots=True)
class StaticTokens:
    """Users by token from a static token file."""

    users: dict[str, UserInfo]

    @classmethod
    def load(cls, path: str | Path) -> StaticTokens:
        """Read kube's CSV token file. Raises ``TokenFileError`` (kube's words) for a
        record with fewer than three columns or a file that is not UTF-8 text, ``OSError``
        for an unreadable file."""
        try:
            text = Path(path).expanduser().read_text(encoding="utf-8-sig")
        except UnicodeDecodeError as exc:
            raise TokenFileError(
                f"token file '{path}': not UTF-8 text (byte {exc.object[exc.start]:#04x} "
                f"at offset {exc.start})"
            ) from None
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
        self.mark_used: UsedMarker | None = None
        """Called when a legacy token is used and its Secret's last-used label is not
        today's (or tomorrow's); None records nothing."""

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
        node: JSON | None = None,
    ) -> tuple[str, int]:
        """A signed token for ``service_account`` (a stored object) and its ``exp``
        (Unix seconds). ``bound`` is ``("Pod"|"Secret"|"Node", object)`` the token is
        bound to; ``node`` is the Node a bound Pod runs on (its ``metadata``: a name
        without uid when the Node is not stored), reported in the ``node`` claim."""
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
            private[kind.lower()] = _ref(obj.get("metadata") or {})
            if kind == "Pod" and node is not None:
                private["node"] = _ref(node)
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
        payload = _b64url(orjson.dumps(claims, option=orjson.OPT_SORT_KEYS))
        signing_input = f"{header}.{payload}".encode("ascii")
        return f"{header}.{payload}.{_b64url(key.sign(signing_input))}", exp

    def issue_legacy(self, service_account: JSON, secret_name: str) -> str:
        """The legacy token kube-controller-manager's tokens controller puts in a
        ``kubernetes.io/service-account-token`` Secret (kube's ``LegacyClaims``): issuer
        ``kubernetes/serviceaccount``, ``sub`` and the four
        ``kubernetes.io/serviceaccount/...`` claims, no audience and no expiry. It is
        accepted while that Secret holds it (see ``review``)."""
        meta = service_account.get("metadata") or {}
        namespace, name = str(meta.get("namespace", "")), str(meta.get("name", ""))
        claims: JSON = {
            "iss": LEGACY_ISSUER,
            LEGACY_NAMESPACE: namespace,
            LEGACY_SECRET_NAME: secret_name,
            LEGACY_SA_NAME: name,
            LEGACY_SA_UID: str(meta.get("uid", "")),
            "sub": f"{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}",
        }
        key = self.key
        header = _b64url(orjson.dumps({"alg": "RS256", "kid": key.kid}))
        payload = _b64url(orjson.dumps(claims, option=orjson.OPT_SORT_KEYS))
        signing_input = f"{header}.{payload}".encode("ascii")
        return f"{header}.{payload}.{_b64url(key.sign(signing_input))}"

    def authenticate(self, token: str) -> UserInfo | None:
        """The ServiceAccount user of a valid token, else None (see the module doc)."""
        return self.review(token, self.audiences).user

    def review(self, token: str, audiences: Sequence[str]) -> TokenReviewResult:
        """``token`` checked as kube's ServiceAccount JWT authenticators check it for
        ``audiences`` (a request to the API: the server's own; a ``TokenReview``: its
        ``spec.audiences``): the user and the token's audiences among ``audiences``. A
        token of this server's issuer is checked as kube's bound-token validator does, one
        of issuer ``kubernetes/serviceaccount`` as its legacy validator does (a token
        without ``aud`` stands for the API audiences). A token that is not a JWT signed by
        this server's key is refused without a reason; any later refusal carries kube's
        message in ``error`` (what a ``TokenReview`` answers)."""
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
        issuer = claims.get("iss")
        if header.get("alg") != "RS256" or issuer not in (self.issuer, LEGACY_ISSUER):
            return refused
        # the key is made (or read from beside the store) on first need, so a token
        # issued before a restart is checked against the key kept; a hostile token costs
        # at most the making of that one key
        if not self.key.verify(signature, f"{header_b64}.{payload_b64}".encode("ascii")):
            return refused
        aud = claims.get("aud")
        auds = [] if aud is None else [aud] if isinstance(aud, str) else aud
        if not isinstance(auds, list) or not all(isinstance(a, str) for a in auds):
            return refused
        if not auds:
            auds = list(self.audiences)  # kube: only the API audiences for legacy tokens
        matched = tuple(a for a in auds if a in audiences)
        if not matched:
            return TokenReviewResult(
                None,
                error=f"token audiences {go_quoted(auds)} is invalid for the target "
                f"audiences {go_quoted(audiences)}",
            )
        if issuer == self.issuer:
            found = self._bound_user(claims)
        else:
            found = self._legacy_user(token, claims)
        if isinstance(found, str):
            return TokenReviewResult(None, error=found)
        if found is None:
            return refused
        return TokenReviewResult(found, matched)

    def _deleted_before(self, obj: JSON, leeway: float) -> bool:
        """Whether ``obj`` has a ``deletionTimestamp`` more than ``leeway`` seconds ago
        (kube's bound-token validator lets a token outlive its objects' deletion by the
        JWT leeway; a timestamp that does not parse counts as long past)."""
        stamp = (obj.get("metadata") or {}).get("deletionTimestamp")
        if not stamp:
            return False
        when = parse_time(stamp) if isinstance(stamp, str) else None
        return when is None or when < self.clock() - leeway

    def _time_claims_error(self, claims: JSON) -> str | None:
        """``exp``, ``nbf`` and ``iat`` checked with kube's leeway: its message, None when
        they hold; ``""`` for a claim that is not a number (refused without a reason)."""
        now = self.clock()
        values = [claims.get("exp"), claims.get("nbf"), claims.get("iat")]
        for value in values:
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int | float)
            ):
                return ""
        exp, nbf, iat = values
        if exp is None:
            return ""  # a bound token always carries one
        if nbf is not None and now + LEEWAY_SECONDS < nbf:
            return "service account token is not valid yet"
        if now - LEEWAY_SECONDS > exp:
            return "service account token has expired"
        if iat is not None and now + LEEWAY_SECONDS < iat:
            return "service account token is issued in the future"
        return None

    def _bound_user(self, claims: JSON) -> UserInfo | str | None:
        """kube's bound-token validator (``pkg/serviceaccount/claims.go``): the user, its
        refusal message, or None for claims of the wrong shape."""
        problem = self._time_claims_error(claims)
        if problem is not None:
            return problem or None
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
        refs: dict[str, JSON] = {}
        for kind in ("pod", "secret", "node"):
            ref = private.get(kind)
            if ref is None:
                continue
            if not isinstance(ref, dict) or not all(
                isinstance(ref.get(k, ""), str) for k in ("name", "uid")
            ):
                return None
            refs[kind] = ref
        stored = self.lookup("serviceaccounts", namespace, name)
        if stored is None:
            return f'serviceaccounts "{name}" not found'
        stored_uid = (stored.get("metadata") or {}).get("uid", "")
        if stored_uid != uid:
            return f"service account UID ({stored_uid}) does not match claim ({uid})"
        if self._deleted_before(stored, LEEWAY_SECONDS):
            return f"service account {namespace}/{name} has been deleted"
        extra: dict[str, tuple[str, ...]] = {}
        for kind, resource, ns in (
            ("secret", "secrets", namespace),
            ("pod", "pods", namespace),
            ("node", "nodes", ""),
        ):
            ref = refs.get(kind)
            if ref is None:
                continue
            ref_name, ref_uid = str(ref.get("name", "")), str(ref.get("uid", ""))
            if kind == "node" and "pod" in refs:
                # a Pod-bound token names its Pod's node: reported, not checked
                extra[NODE_NAME_KEY] = (ref_name,)
                if ref_uid:
                    extra[NODE_UID_KEY] = (ref_uid,)
                continue
            obj = self.lookup(resource, ns, ref_name)
            if obj is None:
                return "service account token has been invalidated"
            obj_uid = (obj.get("metadata") or {}).get("uid", "")
            if obj_uid != ref_uid:
                return (
                    f"{kind} UID ({obj_uid}) does not match service account {kind} ref "
                    f"claim ({ref_uid})"
                )
            if self._deleted_before(obj, LEEWAY_SECONDS):
                return "service account token has been invalidated"
            if kind == "pod":
                extra[POD_NAME_KEY] = (ref_name,)
                extra[POD_UID_KEY] = (ref_uid,)
            elif kind == "node":
                extra[NODE_NAME_KEY] = (ref_name,)
                if ref_uid:
                    extra[NODE_UID_KEY] = (ref_uid,)
        jti = claims.get("jti")
        if isinstance(jti, str) and jti:
            extra[CREDENTIAL_ID_KEY] = (f"JTI={jti}",)
        return service_account_user(namespace, name, uid, _kube_extra_order(extra))

    def _legacy_user(self, token: str, claims: JSON) -> UserInfo | str | None:
        """kube's legacy validator (``pkg/serviceaccount/legacy.go``, with lookup, as
        kube-apiserver runs it): the token must still be the ``token`` of its Secret, which
        must not be labelled ``kubernetes.io/legacy-token-invalid-since``, and its
        ServiceAccount must stand with the uid in the token. A use records the day in the
        Secret's ``kubernetes.io/legacy-token-last-used`` label (``mark_used``)."""
        fields = {}
        for key in ("sub", LEGACY_NAMESPACE, LEGACY_SECRET_NAME, LEGACY_SA_NAME, LEGACY_SA_UID):
            value = claims.get(key, "")
            if not isinstance(value, str):
                return None  # kube: the claims do not decode
            fields[key] = value
        for key, what in (
            ("sub", "sub"),
            (LEGACY_NAMESPACE, "namespace"),
            (LEGACY_SECRET_NAME, "secretName"),
            (LEGACY_SA_NAME, "serviceAccountName"),
            (LEGACY_SA_UID, "serviceAccountUID"),
        ):
            if not fields[key]:
                return f"{what} claim is missing"
        namespace, secret_name = fields[LEGACY_NAMESPACE], fields[LEGACY_SECRET_NAME]
        name, uid = fields[LEGACY_SA_NAME], fields[LEGACY_SA_UID]
        if split_service_account_user(fields["sub"]) != (namespace, name):
            return "sub claim is invalid"
        secret = self.lookup("secrets", namespace, secret_name)
        if secret is None or (secret.get("metadata") or {}).get("deletionTimestamp"):
            return "Token has been invalidated"
        stored_token = (secret.get("data") or {}).get(SECRET_TOKEN_KEY)
        if not hmac.compare_digest(secret_value(stored_token), token.encode("utf-8")):
            return "Token does not match server's copy"
        account = self.lookup("serviceaccounts", namespace, name)
        if account is None:
            return f'serviceaccounts "{name}" not found'
        meta = account.get("metadata") or {}
        if meta.get("deletionTimestamp"):
            return f"ServiceAccount {namespace}/{name} has been deleted"
        if meta.get("uid", "") != uid:
            return f"ServiceAccount UID ({meta.get('uid', '')}) does not match claim ({uid})"
        labels = (secret.get("metadata") or {}).get("labels") or {}
        if labels.get(INVALID_SINCE_LABEL):
            self._mark_used(secret)
            return (
                f"the token in secret {namespace}/{secret_name} for service account "
                f"{namespace}/{name} has been marked invalid. Use tokens from the TokenRequest "
                "API or manually created secret-based tokens, or remove the "
                f"'{INVALID_SINCE_LABEL}' label from the secret to temporarily allow use of "
                "this token"
            )
        self._mark_used(secret)
        return service_account_user(namespace, name, uid)

    def _mark_used(self, secret: JSON) -> None:
        """Hand ``secret`` to ``mark_used`` with today's date (UTC, ``YYYY-MM-DD``) unless
        its last-used label already says today or tomorrow (kube writes at most once a
        day)."""
        if self.mark_used is None:
            return
        now = self.clock()
        today = time.strftime("%Y-%m-%d", time.gmtime(now))
        tomorrow = time.strftime("%Y-%m-%d", time.gmtime(now + 86400))
        labels = (secret.get("metadata") or {}).get("labels") or {}
        if labels.get(LAST_USED_LABEL) in (today, tomorrow):
            return
        self.mark_used(secret, today)


def _ref(meta: JSON) -> JSON:
    """A claim naming an object: its name and uid, each left out when empty (kube's
    ``omitempty``)."""
    return {k: str(meta[k]) for k in ("name", "uid") if meta.get(k)}


def secret_value(text: Any) -> bytes:
    """The bytes of a stored Secret ``data`` value (canonical base64), empty when absent
    or not base64."""
    if not isinstance(text, str):
        return b""
    try:
        return base64.b64decode(text, validate=True)
    except (ValueError, binascii.Error):
        return b""


def _kube_extra_order(extra: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
    """The extra of a ServiceAccount user in the order kube's ``ServiceAccountInfo.UserInfo``
    fills it: pod name and uid, credential id, node name and uid."""
    order = (POD_NAME_KEY, POD_UID_KEY, CREDENTIAL_ID_KEY, NODE_NAME_KEY, NODE_UID_KEY)
    return {key: extra[key] for key in order if key in extra}
