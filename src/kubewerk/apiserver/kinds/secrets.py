"""``v1`` Secret as kube-apiserver decodes, validates and stores it.

- Decoding is typed (the vendored ``io.k8s.api.core.v1.Secret``): a value of the wrong
  type is 400 ``Secret in version "v1" cannot be handled as a Secret: json: cannot
  unmarshal number into Go struct field Secret.stringData of type string``; a ``data``
  value that is not base64 is 400 ``... illegal base64 data at input byte N``; a
  ``null`` value in ``data`` or ``stringData`` is the empty string, as Go leaves it;
  ``data`` is stored as canonical base64 (what Go writes back for the bytes).
- ``type`` defaults to ``Opaque`` when absent or empty (``SetDefaults_Secret``).
- ``stringData`` is merged into ``data`` before anything else sees the object, as kube's
  ``Convert_v1_Secret_To_core_Secret`` does: each of its keys overwrites the same key of
  ``data`` with its UTF-8 bytes (base64 here); an empty ``stringData`` adds nothing (no
  ``data`` map appears); ``stringData`` itself is never stored or served. This holds for
  create, update, every patch type and server-side apply (the patched or applied object
  is decoded the same way), so its keys are validated as ``data[<key>]``.
- A ``kubernetes.io/tls`` Secret whose pair does not load (``tls.X509KeyPair``) is
  written with the error as a warning (``warningsForSecret``), on create and update.
- Validation is ``ValidateSecret`` / ``ValidateSecretUpdate``: config keys, the 1 MiB
  total, the rules of the well-known types (``kindrules.secret_types``), on create and
  on every update; an update may not change ``type``, nor ``immutable``/``data`` once
  the old Secret is immutable.
- An empty ``data`` is not stored (kube's protobuf storage keeps no empty map and the
  field is ``omitempty``); fields are stored in the Go struct's order.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any, Final

from kubewerk.apiserver.kindrules.gojson import Base64Error, struct_order
from kubewerk.apiserver.kindrules.secret_types import (
    secret_bytes,
    secret_size_errors,
    secret_type_errors,
)
from kubewerk.apiserver.kindrules.tls_pair import x509_key_pair_error
from kubewerk.apiserver.kinds.configmaps import canonical_bytes, core_decoder, immutable_errors
from kubewerk.apiserver.kinds.schemas import BYTES_MAP, STRING_MAP, object_schema
from kubewerk.apiserver.kinds.typed_decode import TypeMismatch
from kubewerk.apiserver.registry import ServedResource
from kubewerk.apiserver.strategy import AGE, PrinterColumn, Strategy
from kubewerk.core.errors import ApiError, FieldError
from kubewerk.core.jsoncopy import copy_json
from kubewerk.core.meta import age
from kubewerk.core.validation import validate_config_keys

JSON = dict[str, Any]

DEFINITION: Final = "io.k8s.api.core.v1.Secret"


def _decode_body(secret: JSON) -> None:
    """The conversion kube's decoder applies before anything else sees a Secret: the body
    must decode into ``v1.Secret`` (else the decoder's 400), ``type`` is defaulted and
    ``stringData`` merged into ``data`` (see the module docstring)."""
    try:
        trial = copy_json(secret)
        core_decoder().decode(trial, DEFINITION)
        canonical_bytes(trial, "data")
    except (TypeMismatch, Base64Error) as exc:
        raise ApiError.bad_request(
            f'Secret in version "v1" cannot be handled as a Secret: {exc}'
        ) from None
    _convert(secret)


def _convert(secret: JSON) -> None:
    """``SetDefaults_Secret`` and the conversion to the internal type, of a Secret that
    decodes: ``type`` defaulted to Opaque, ``stringData`` merged into ``data`` (its keys
    win) and dropped. Idempotent."""
    if not secret.get("type"):
        secret["type"] = "Opaque"
    string_data = secret.pop("stringData", None)
    if not isinstance(string_data, dict) or not string_data:
        return
    data = secret.get("data")
    if not isinstance(data, dict):
        data = secret["data"] = {}
    for key, value in string_data.items():
        text = value if isinstance(value, str) else ""
        data[key] = base64.b64encode(text.encode("utf-8", "surrogatepass")).decode("ascii")


class SecretStrategy(Strategy):
    """Typed decoding, ``stringData`` merged on every write, kube's validation."""

    prunes_unknown_fields = False  # typed_decode does it
    # its create hooks (typed_decode, default, validate, warnings, to_storage) read and
    # change only the object, with the shared decoder's own locked caches
    # (Strategy.offload_safe)
    offload_safe = True

    def prepare_for_create(self, obj: JSON) -> None:
        """A create's body was typed (``typed_decode``) before this: only converted here
        (``type`` defaulted, ``stringData`` merged), without decoding it again on the loop."""
        super().prepare_for_create(obj)
        _convert(obj)

    def prepare_for_update(self, new: JSON, old: JSON) -> None:
        _decode_body(new)

    def default(self, obj: JSON) -> None:
        """What decoding a Secret does beyond typing it, as kube's decoder does it before
        admission sees the object: ``type`` defaulted, ``stringData`` merged into
        ``data`` (``obj`` decodes: ``typed_decode`` ran)."""
        _convert(obj)

    def typed_decode(self, obj: JSON, version: str) -> list[str] | None:
        unknown: list[str] = core_decoder().decode(obj, DEFINITION)
        canonical_bytes(obj, "data")
        return unknown

    def validate(self, obj: JSON, old: JSON | None) -> list[FieldError]:
        """``ValidateSecretUpdate`` (``old`` given): ``type`` unchanged, the immutable
        rules; then ``ValidateSecret``: config keys of ``data`` (``stringData``'s are in
        it by now), its 1 MiB total, the rules of the well-known types."""
        errs: list[FieldError] = []
        if old is not None and obj.get("type") != old.get("type"):
            errs.append(FieldError.invalid("type", obj.get("type"), "field is immutable"))
        errs.extend(immutable_errors(obj, old, ("data",)))
        data = obj.get("data")
        errs.extend(validate_config_keys(data, "data"))
        errs.extend(secret_size_errors(data))
        errs.extend(secret_type_errors(obj))
        return errs

    def warnings(self, obj: JSON, old: JSON | None) -> Sequence[str]:
        """``warningsForSecret``: a ``kubernetes.io/tls`` Secret whose ``tls.crt`` and
        ``tls.key`` do not load as a pair (Go's ``tls.X509KeyPair``) gets its error as a
        warning, on create and update."""
        if obj.get("type") != "kubernetes.io/tls":
            return []
        data = obj.get("data")
        data = data if isinstance(data, dict) else {}
        cert, key = secret_bytes(data.get("tls.crt")), secret_bytes(data.get("tls.key"))
        problem = x509_key_pair_error(cert, key)
        return [] if problem is None else [problem]

    def to_storage(self, obj: JSON) -> JSON:
        if obj.get("data") == {}:
            del obj["data"]
        struct_order(obj, ("immutable", "data", "type"))
        return obj


def resource_type() -> ServedResource:
    return ServedResource(
        group="",
        resource="secrets",
        kind="Secret",
        list_kind="SecretList",
        singular="secret",
        namespaced=True,
        versions=["v1"],
        storage_version="v1",
        strategic_kind="Secret",
        strategy=SecretStrategy(
            columns=[
                PrinterColumn("Type", "string", ".type"),
                PrinterColumn("Data", "string", ".data"),
                AGE,
            ],
            cells=lambda o: [o.get("type", ""), len(o.get("data") or {}), age(o)],
            field_key="v1/Secret",
        ),
        schemas={
            "v1": object_schema(
                "Secret holds secret data of a certain type.",
                {
                    "data": BYTES_MAP,
                    "stringData": STRING_MAP,
                    "type": {"type": "string"},
                    "immutable": {"type": "boolean"},
                },
            )
        },
    )
