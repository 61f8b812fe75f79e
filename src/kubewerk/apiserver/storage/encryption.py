"""Encryption at rest: kube-apiserver's EncryptionConfiguration for the SQLite store.

``load_encryption_config(path)`` reads an ``apiserver.config.k8s.io/v1``
``EncryptionConfiguration`` (YAML or JSON) and gives an ``EncryptionConfig``: for each
stored key, the chain of providers that applies to its resource. A store calls
``sealer_for(key)`` once per key it writes or reads:

- writing, the **first** provider of the chain transforms the value and prefixes it as
  kube-apiserver does: ``k8s:enc:aesgcm:v1:<key name>:`` + nonce + ciphertext + tag,
  ``k8s:enc:secretbox:v1:<key name>:`` + nonce + box, ``identity`` writes plaintext;
- reading, **every** provider is tried in order (the first whose prefix matches and that
  opens the value wins), so a key or provider can be rotated in: add it, make it first,
  rewrite the values, remove the old one. A value that no provider opens raises
  ``UndecryptableValue`` with kube-apiserver's words (``unable to transform key "K": no
  matching prefix found``; ``identity transformer tried to read encrypted data``; the
  cipher's failure), a 500 ``InternalError`` to the API client.

Resources are matched as kube-apiserver matches them: the exact ``resource.group``
(``secrets`` for the core group), then ``*.group`` (``*.`` for the core group), then
``*.*``; resources named in several entries get the providers of all of them, in entry
order. Keys not matched at all are read by the identity check (plaintext, and a clear
error for a value that is encrypted). AES-GCM authenticates the storage key as
additional data, as kube-apiserver authenticates the etcd key: a value copied to
another key does not open.

Providers: ``aesgcm`` (16, 24 or 32-byte keys, ``cryptography``'s AESGCM, a random 96-bit
nonce per write), ``secretbox`` (32-byte keys, XSalsa20-Poly1305 through PyNaCl: the
``cryptography`` package has no XSalsa20), ``identity``. ``aescbc`` (kube-apiserver
deprecates it: CBC is malleable and unauthenticated) and ``kms`` (needs an external
plugin) are refused with a message saying so. The configuration is validated with
kube-apiserver's rules and messages (key lengths, base64, one provider per element,
overlapping and duplicate resources, ``*``, ``events.k8s.io``, ``extensions``, ``x.*``,
capital letters, resources without a REST API) before any store opens.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Protocol

import yaml
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from nacl.exceptions import CryptoError
from nacl.secret import SecretBox

from kubewerk.core.errors import FieldError, aggregate_message

from .base import StorageError

__all__ = [
    "API_VERSION",
    "ENCRYPTED_PREFIX",
    "KIND",
    "EncryptionConfig",
    "EncryptionConfigError",
    "Sealer",
    "UndecryptableValue",
    "load_encryption_config",
    "parse_encryption_config",
]

API_VERSION: Final = "apiserver.config.k8s.io/v1"
KIND: Final = "EncryptionConfiguration"
ENCRYPTED_PREFIX: Final = b"k8s:enc:"
"""Every encrypted value starts with this; a plaintext JSON object starts with ``{``."""

_AES_KEY_SIZES: Final = (16, 24, 32)
_SECRETBOX_KEY_SIZES: Final = (32,)
_GCM_NONCE: Final = 12
_NO_MATCH: Final = "no matching prefix found"
IDENTITY_READ: Final = "identity transformer tried to read encrypted data"
_REFUSED: Final = {
    "aescbc": (
        "the aescbc provider is not supported by kubewerk: kube-apiserver deprecates it "
        "(CBC is unauthenticated); use aesgcm or secretbox"
    ),
    "kms": (
        "the kms provider is not supported by kubewerk: it needs an external KMS plugin; "
        "use aesgcm or secretbox"
    ),
}
_PROVIDERS: Final = ("kms", "aesgcm", "aescbc", "secretbox", "identity")
_NON_REST: Final = frozenset(
    {"apiserveripinfo", "serviceipallocations", "servicenodeportallocations"}
)


class EncryptionConfigError(ValueError):
    """An EncryptionConfiguration that cannot be used; the message names the file and
    every problem (kube-apiserver's field paths and words) and is fit to show as is."""


class UndecryptableValue(StorageError):
    """A stored value no configured provider can read (wrong or missing key, tampering).

    ``str()`` is kube-apiserver's ``unable to transform key "KEY": CAUSE``; the API
    answers it as ``500 InternalError`` (``Internal error occurred: ...``).
    """

    def __init__(self, key: str, cause: str) -> None:
        super().__init__(f"unable to transform key {json.dumps(key)}: {cause}")
        self.key = key
        self.cause = cause


class _Transformer(Protocol):
    def seal(self, data: bytes, aad: bytes) -> bytes: ...

    def open(self, data: bytes, aad: bytes) -> bytes: ...


class _AesGcm:
    __slots__ = ("_aead",)

    def __init__(self, secret: bytes) -> None:
        self._aead = AESGCM(secret)

    def seal(self, data: bytes, aad: bytes) -> bytes:
        nonce = os.urandom(_GCM_NONCE)
        return nonce + self._aead.encrypt(nonce, data, aad)

    def open(self, data: bytes, aad: bytes) -> bytes:
        if len(data) < _GCM_NONCE:
            raise ValueError("the stored data was shorter than the required size")
        try:
            return self._aead.decrypt(data[:_GCM_NONCE], data[_GCM_NONCE:], aad)
        except InvalidTag:
            raise ValueError("cipher: message authentication failed") from None


class _SecretBox:
    __slots__ = ("_box",)

    def __init__(self, secret: bytes) -> None:
        self._box = SecretBox(secret)

    def seal(self, data: bytes, aad: bytes) -> bytes:
        # nonce (24 random bytes) then the box (Poly1305 tag + XSalsa20 ciphertext), as
        # kube-apiserver lays it out; secretbox authenticates no additional data
        return bytes(self._box.encrypt(data))

    def open(self, data: bytes, aad: bytes) -> bytes:
        if len(data) < SecretBox.NONCE_SIZE + SecretBox.MACBYTES:
            raise ValueError("the stored data was shorter than the required size")
        try:
            return bytes(self._box.decrypt(data))
        except CryptoError:
            raise ValueError("output array too small or data is not valid") from None


@dataclass(frozen=True, slots=True)
class _Prefixed:
    prefix: bytes  # b"" for identity
    transformer: _Transformer | None  # None for identity


@dataclass(frozen=True, slots=True)
class Sealer:
    """The provider chain of one resource: the first writes, all read.

    ``writes_plaintext`` is True when the first provider is ``identity``.
    """

    chain: tuple[_Prefixed, ...]

    @property
    def writes_plaintext(self) -> bool:
        return self.chain[0].transformer is None

    @property
    def write_prefix(self) -> bytes:
        """What every value written through this chain starts with (b"" for identity)."""
        return self.chain[0].prefix

    def seal(self, key: str, data: bytes) -> bytes:
        """``data`` (the object's JSON) as it is stored under ``key``."""
        first = self.chain[0]
        if first.transformer is None:
            return data
        return first.prefix + first.transformer.seal(data, key.encode())

    def open(self, key: str, stored: bytes) -> tuple[bytes, bool]:
        """The plaintext of ``stored`` and whether it was written by another provider
        than the first (stale: a rewrite moves it to the first).

        Raises ``UndecryptableValue`` when no provider of the chain opens it.
        """
        errors: list[str] = []
        for i, p in enumerate(self.chain):
            if p.transformer is None:
                if stored.startswith(ENCRYPTED_PREFIX):
                    continue  # identity never reads encrypted data; try the next one
                return stored, i != 0
            if stored.startswith(p.prefix):
                try:
                    return p.transformer.open(stored[len(p.prefix) :], key.encode()), i != 0
                except ValueError as e:
                    errors.append(str(e))
        if errors:
            raise UndecryptableValue(
                key, errors[0] if len(errors) == 1 else f"[{', '.join(errors)}]"
            )
        raise UndecryptableValue(key, _NO_MATCH)


def open_unmatched(key: str, stored: bytes) -> bytes:
    """Read a value of a resource no rule names: plaintext, or kube's identity error."""
    if stored.startswith(ENCRYPTED_PREFIX):
        raise UndecryptableValue(key, IDENTITY_READ)
    return stored


@dataclass(slots=True)
class EncryptionConfig:
    """A validated EncryptionConfiguration: the provider chain for each resource.

    ``sealer_for(key)`` maps a store key (``/<group or "core">/<resource>/...``) to the
    chain that applies, None when no rule names its resource (then values are plaintext
    and are read with the identity check). The answer per resource is cached.
    """

    rules: dict[tuple[str, str], Sealer]
    source: str = "<config>"
    _cache: dict[str, Sealer | None] = field(default_factory=dict)

    def sealer_for(self, key: str) -> Sealer | None:
        """The chain for ``key``'s resource (exact, then ``*.group``, then ``*.*``)."""
        # "/group/resource/..." -> "/group/resource/"
        end = key.find("/", key.find("/", 1) + 1)
        bucket = key if end < 0 else key[: end + 1]
        try:
            return self._cache[bucket]
        except KeyError:
            pass
        parts = bucket.split("/")
        group = "" if len(parts) < 2 or parts[1] == "core" else parts[1]
        resource = parts[2] if len(parts) > 2 else ""
        rules = self.rules
        sealer = rules.get((group, resource)) or rules.get((group, "*")) or rules.get(("*", "*"))
        if len(self._cache) < 4096:
            self._cache[bucket] = sealer
        return sealer

    @property
    def encrypts_anything(self) -> bool:
        """Whether any resource's first provider encrypts."""
        return any(not s.writes_plaintext for s in self.rules.values())


def load_encryption_config(path: str | Path) -> EncryptionConfig:
    """Read and validate the EncryptionConfiguration file at ``path`` (YAML or JSON).

    Raises ``EncryptionConfigError`` naming the file for an unreadable, malformed or
    invalid configuration.
    """
    p = Path(path).expanduser()
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise EncryptionConfigError(f"cannot read encryption provider config {p}: {e}") from e
    try:
        doc = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as e:
        raise EncryptionConfigError(
            f"error while parsing encryption provider configuration file {p}: {e}"
        ) from e
    return parse_encryption_config(doc, source=str(p))


def parse_encryption_config(doc: Any, source: str = "<config>") -> EncryptionConfig:
    """Validate a decoded EncryptionConfiguration document and build its provider chains.

    Raises ``EncryptionConfigError`` listing every problem, with kube-apiserver's
    messages where kube-apiserver has one.
    """
    where = f"encryption provider configuration file {source}"
    if not isinstance(doc, Mapping):
        raise EncryptionConfigError(f"error while parsing {where}: not an object")
    if doc.get("kind") != KIND or doc.get("apiVersion") != API_VERSION:
        raise EncryptionConfigError(
            f"error while parsing {where}: expected kind {KIND} of apiVersion {API_VERSION}, "
            f"got kind {doc.get('kind')!r} of apiVersion {doc.get('apiVersion')!r}"
        )
    errors: list[FieldError] = []
    entries = doc.get("resources")
    if not isinstance(entries, list) or not entries:
        errors.append(FieldError.required("resources", "at least one resources is required"))
        raise _invalid(where, errors)
    chains: dict[tuple[str, str], list[_Prefixed]] = {}
    for i, entry in enumerate(entries):
        r_path, p_path = f"resources[{i}].resources", f"resources[{i}].providers"
        if not isinstance(entry, Mapping):
            errors.append(FieldError.invalid(f"resources[{i}]", entry, "must be an object"))
            continue
        resources = entry.get("resources") or []
        providers = entry.get("providers") or []
        if not isinstance(resources, list) or not all(isinstance(r, str) for r in resources):
            errors.append(FieldError.invalid(r_path, resources, "must be a list of strings"))
            resources = []
        if not isinstance(providers, list):
            errors.append(FieldError.invalid(p_path, providers, "must be a list"))
            providers = []
        if not resources:
            errors.append(FieldError.required(r_path, f"at least one {r_path} is required"))
        errors.extend(_resource_overlap(resources, r_path))
        errors.extend(_resource_names(resources, r_path))
        if not providers:
            errors.append(FieldError.required(p_path, f"at least one {p_path} is required"))
        built: list[_Prefixed] = []
        for j, provider in enumerate(providers):
            built.extend(_provider(provider, f"{p_path}[{j}]", errors))
        for res in resources:
            chains.setdefault(_group_resource(res), []).extend(built)
    if errors:
        raise _invalid(where, errors)
    return EncryptionConfig({gr: Sealer(tuple(c)) for gr, c in chains.items()}, source)


def _invalid(where: str, errors: Sequence[FieldError]) -> EncryptionConfigError:
    return EncryptionConfigError(f"error while parsing {where}: {aggregate_message(errors)}")


def _group_resource(text: str) -> tuple[str, str]:
    """``schema.ParseGroupResource``: ``resource.group`` split at the first dot."""
    resource, _, group = text.partition(".")
    return group, resource


def _resource_overlap(resources: Sequence[str], path: str) -> list[FieldError]:
    grs = [_group_resource(r) for r in resources]
    duplicate = overlap = False
    for i, a in enumerate(grs):
        for j, b in enumerate(grs):
            if i == j:
                continue
            if a == b:
                duplicate = True
                continue
            if a == ("*", "*") or (a[0] == b[0] and "*" in (a[1], b[1])):
                overlap = True
    out = []
    if duplicate:
        out.append(
            FieldError.invalid(
                path, list(resources), "the same resource cannot be specified multiple times"
            )
        )
    if overlap:
        out.append(
            FieldError.invalid(
                path,
                list(resources),
                "using overlapping resources such as 'secrets' and '*.' in the same resource "
                "list is not allowed as they will be masked",
            )
        )
    return out


def _resource_names(resources: Sequence[str], path: str) -> list[FieldError]:
    out: list[FieldError] = []
    for j, res in enumerate(resources):
        p = f"{path}[{j}]"
        group, resource = _group_resource(res)
        detail = None
        if res.lower() != res:
            detail = "resource name should not contain capital letters"
        elif res == "*":
            detail = (
                "use '*.' to encrypt all the resources from core API group or *.* to encrypt "
                "all resources"
            )
        elif res in _NON_REST:
            detail = "resources which do not have REST API/s cannot be encrypted"
        elif group == "events.k8s.io":
            detail = (
                "'*.events.k8s.io' objects are stored using the 'events' API group in etcd. "
                "Use 'events' instead in the config file"
            )
        elif group == "extensions":
            detail = "'extensions' group has been removed and cannot be used for encryption"
        elif group == "*" and resource != "*":
            detail = "encrypting the same resource across groups is not supported"
        if detail is not None:
            out.append(FieldError.invalid(p, res, detail))
    return out


def _provider(provider: Any, path: str, errors: list[FieldError]) -> list[_Prefixed]:
    if not isinstance(provider, Mapping):
        errors.append(FieldError.invalid(path, type(provider).__name__, "must be an object"))
        return []
    named = [n for n in _PROVIDERS if provider.get(n) is not None]
    unknown = sorted(set(provider) - set(_PROVIDERS))
    if unknown:
        errors.append(FieldError.invalid(path, sorted(provider), f"unknown field {unknown[0]!r}"))
        return []
    if not named:
        errors.append(
            FieldError.invalid(
                path,
                sorted(provider),
                "provider does not contain any of the expected providers: KMS, AESGCM, "
                "AESCBC, Secretbox, Identity",
            )
        )
        return []
    if len(named) > 1:
        errors.append(
            FieldError.invalid(
                path,
                sorted(provider),
                "more than one provider specified in a single element, should split into "
                "different list elements",
            )
        )
        return []
    name = named[0]
    if name in _REFUSED:
        errors.append(FieldError.forbidden(f"{path}.{name}", _REFUSED[name]))
        return []
    if name == "identity":
        return [_Prefixed(b"", None)]
    body = provider[name]
    keys_path = f"{path}.{name}.keys"
    keys = body.get("keys") if isinstance(body, Mapping) else None
    if not isinstance(keys, list) or not keys:
        errors.append(FieldError.required(keys_path, "at least one keys is required"))
        return []
    sizes = _AES_KEY_SIZES if name == "aesgcm" else _SECRETBOX_KEY_SIZES
    out: list[_Prefixed] = []
    for k, key in enumerate(keys):
        secret = _key_secret(key, f"{keys_path}[{k}]", sizes, errors)
        if secret is None:
            continue
        key_name = str(key["name"])
        transformer: _Transformer = _AesGcm(secret) if name == "aesgcm" else _SecretBox(secret)
        prefix = f"k8s:enc:{name}:v1:{key_name}:".encode()
        out.append(_Prefixed(prefix, transformer))
    return out


def _key_secret(
    key: Any, path: str, sizes: tuple[int, ...], errors: list[FieldError]
) -> bytes | None:
    if not isinstance(key, Mapping):
        errors.append(FieldError.invalid(path, type(key).__name__, "must be an object"))
        return None
    ok = True
    if not key.get("name"):
        errors.append(FieldError.required(f"{path}.name", "name is a mandatory field for a key"))
        ok = False
    secret_text = key.get("secret")
    if not secret_text:
        errors.append(
            FieldError.required(f"{path}.secret", "secret is a mandatory field for a key")
        )
        return None
    try:
        secret = base64.b64decode(str(secret_text), validate=True)
    except (binascii.Error, ValueError):
        errors.append(
            FieldError.invalid(f"{path}.secret", "REDACTED", "secrets must be base64 encoded")
        )
        return None
    if len(secret) not in sizes:
        errors.append(
            FieldError.invalid(
                f"{path}.secret",
                "REDACTED",
                f"secret is not of the expected length, got {len(secret)}, expected one of "
                f"[{' '.join(str(s) for s in sizes)}]",
            )
        )
        return None
    return secret if ok else None
