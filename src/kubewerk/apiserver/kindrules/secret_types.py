"""The rules ``ValidateSecret`` (k8s.io/kubernetes pkg/apis/core/validation/validation.go)
holds a Secret to for its ``type``, and the total-size rule it shares with
``ValidateConfigMap``. They run on create and, through ``ValidateSecretUpdate``, on
every update too.

=================================== ==========================================================
``type``                            what its ``data`` must hold (errors, in kube's order)
=================================== ==========================================================
``kubernetes.io/service-account-    the annotation ``kubernetes.io/service-account.name``,
token``                             non-empty: ``metadata.annotations[kubernetes.io/service-
                                    account.name]: Required value``
``kubernetes.io/dockercfg``         ``.dockercfg`` (``data[.dockercfg]: Required value``),
                                    a JSON object or ``null``: ``data[.dockercfg]: Invalid
                                    value: "<secret contents redacted>": <Go's json error>``
``kubernetes.io/dockerconfigjson``  the same for ``.dockerconfigjson``
``kubernetes.io/basic-auth``        ``username`` or ``password`` (either may be empty); with
                                    neither, both are ``Required value``
``kubernetes.io/ssh-auth``          ``ssh-privatekey``, not empty
``kubernetes.io/tls``               ``tls.crt`` and ``tls.key`` (present; empty is allowed)
anything else                       nothing (``Opaque``, ``bootstrap.kubernetes.io/token``
                                    and any type of the user's own)
=================================== ==========================================================

The size rule: a Secret's ``data`` values (decoded bytes) may total at most
``MAX_SECRET_SIZE`` (1 MiB): ``data: Too long: may not be more than 1048576 bytes``; a
ConfigMap's ``data`` (UTF-8 bytes) and ``binaryData`` (decoded bytes) together the same,
reported at kube's ``field.NewPath("")``, which prints as ``[]``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kubewerk.apiserver.kindrules.gojson import Base64Error, decode_bytes, map_unmarshal_error
from kubewerk.core.errors import FieldError

__all__ = [
    "MAX_SECRET_SIZE",
    "SERVICE_ACCOUNT_NAME_KEY",
    "bytes_len",
    "config_map_size_errors",
    "secret_bytes",
    "secret_size_errors",
    "secret_type_errors",
]

MAX_SECRET_SIZE: Final = 1024 * 1024
"""``core.MaxSecretSize``: the most a Secret's or a ConfigMap's data may hold, in bytes."""

SERVICE_ACCOUNT_NAME_KEY: Final = "kubernetes.io/service-account.name"
REDACTED: Final = "<secret contents redacted>"

_DOCKER_KEYS: Final = {
    "kubernetes.io/dockercfg": ".dockercfg",
    "kubernetes.io/dockerconfigjson": ".dockerconfigjson",
}


def bytes_len(text: Any) -> int:
    """How many bytes the base64 text of a ``[]byte`` value decodes to (0 for anything
    that is not a string or not base64). Text of a length divisible by 4 without line
    breaks is counted from its length and padding alone: values that passed the typed
    decode (``kinds.configmaps.canonical_bytes``) are canonical base64."""
    if not isinstance(text, str):
        return 0
    n = len(text)
    if n % 4 == 0 and "\n" not in text and "\r" not in text:
        return n // 4 * 3 - (text.endswith("==") + text.endswith("="))
    try:
        return len(decode_bytes(text))
    except Base64Error:
        return 0


def secret_bytes(text: Any) -> bytes:
    """The bytes of a ``[]byte`` value's base64 text (empty for anything else)."""
    if not isinstance(text, str):
        return b""
    try:
        return decode_bytes(text)
    except Base64Error:
        return b""


def secret_size_errors(data: Any) -> list[FieldError]:
    """``ValidateSecret``'s size rule over ``data`` (base64 values)."""
    if not isinstance(data, dict):
        return []
    total = sum(bytes_len(v) for v in data.values())
    return [FieldError.too_long("data", MAX_SECRET_SIZE)] if total > MAX_SECRET_SIZE else []


def config_map_size_errors(data: Any, binary: Any) -> list[FieldError]:
    """``ValidateConfigMap``'s size rule over ``data`` and ``binaryData``."""
    total = 0
    if isinstance(data, dict):
        total += sum(
            len(v.encode("utf-8", "surrogatepass")) for v in data.values() if isinstance(v, str)
        )
    if isinstance(binary, dict):
        total += sum(bytes_len(v) for v in binary.values())
    return [FieldError.too_long("[]", MAX_SECRET_SIZE)] if total > MAX_SECRET_SIZE else []


def secret_type_errors(secret: Mapping[str, Any]) -> list[FieldError]:
    """The errors of ``ValidateSecret``'s switch on ``type`` (see the module docstring)."""
    kind = secret.get("type")
    data = secret.get("data")
    data = data if isinstance(data, dict) else {}
    if kind == "kubernetes.io/service-account-token":
        meta = secret.get("metadata")
        annotations = meta.get("annotations") if isinstance(meta, dict) else None
        name = annotations.get(SERVICE_ACCOUNT_NAME_KEY) if isinstance(annotations, dict) else None
        if not name:
            return [FieldError.required(f"metadata.annotations[{SERVICE_ACCOUNT_NAME_KEY}]")]
        return []
    if kind in _DOCKER_KEYS:
        key = _DOCKER_KEYS[kind]
        if key not in data:
            return [FieldError.required(f"data[{key}]")]
        problem = map_unmarshal_error(secret_bytes(data[key]))
        return [] if problem is None else [FieldError.invalid(f"data[{key}]", REDACTED, problem)]
    if kind == "kubernetes.io/basic-auth":
        if "username" not in data and "password" not in data:
            return [FieldError.required("data[username]"), FieldError.required("data[password]")]
        return []
    if kind == "kubernetes.io/ssh-auth":
        if not bytes_len(data.get("ssh-privatekey")):
            return [FieldError.required("data[ssh-privatekey]")]
        return []
    if kind == "kubernetes.io/tls":
        return [FieldError.required(f"data[{k}]") for k in ("tls.crt", "tls.key") if k not in data]
    return []
