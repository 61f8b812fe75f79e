"""``v1`` ConfigMap: typed decoding, its Table (Data counts entries), ``ValidateConfigMap``
(keys, the 1 MiB total) and ``immutable``; an empty ``data`` or ``binaryData`` is not
stored (kube's protobuf storage keeps no empty map and both are ``omitempty``); fields
are stored in the Go struct's order.

Also the typed decoding the core ``v1`` config kinds share (:func:`core_decoder`,
:func:`canonical_bytes`): Secrets and ServiceAccounts decode through it too."""

from __future__ import annotations

import base64
from functools import cache
from typing import Any, Final

from kubewerk.apiserver.kindrules.gojson import decode_bytes, struct_order
from kubewerk.apiserver.kindrules.secret_types import config_map_size_errors
from kubewerk.apiserver.kinds.schemas import BYTES_MAP, STRING_MAP, object_schema
from kubewerk.apiserver.kinds.typed_decode import TypedDecoder
from kubewerk.apiserver.registry import ServedResource
from kubewerk.apiserver.strategy import AGE, PrinterColumn, Strategy
from kubewerk.core.errors import FieldError
from kubewerk.core.meta import age
from kubewerk.core.validation import is_config_map_key, validate_config_keys

JSON = dict[str, Any]

IMMUTABLE_SET = "field is immutable when `immutable` is set"
DEFINITION: Final = "io.k8s.api.core.v1.ConfigMap"


@cache
def core_decoder() -> TypedDecoder:
    """The typed decoder over the vendored definitions (built on first use)."""
    from kubewerk.apiserver.kinds import k8s_openapi

    return TypedDecoder(k8s_openapi.definitions())


def null_to_empty(obj: JSON, field: str) -> None:
    """A ``null`` value of the string map ``obj[field]`` is ``""``, as Go's decoder leaves
    a map element it reads ``null`` into."""
    values = obj.get(field)
    if isinstance(values, dict):
        for key, value in values.items():
            if value is None:
                values[key] = ""


def canonical_bytes(obj: JSON, field: str) -> None:
    """Decode the ``map[string][]byte`` ``obj[field]`` as Go does and keep each value as
    the base64 Go writes back for its bytes (``null`` is empty); raises
    ``kindrules.gojson.Base64Error`` for a value that is not base64 (first in map order)."""
    values = obj.get(field)
    if not isinstance(values, dict):
        return
    for key, value in values.items():
        if value is None:
            values[key] = ""
        elif isinstance(value, str) and value:
            text = base64.b64encode(decode_bytes(value)).decode("ascii")
            if text != value:
                values[key] = text


def immutable_errors(obj: JSON, old: JSON | None, fields: tuple[str, ...]) -> list[FieldError]:
    """What ``ValidateConfigMapUpdate`` / ``ValidateSecretUpdate`` forbid once the old
    object is ``immutable: true``: turning it off, and any change of ``fields`` (an empty
    map and an absent one are the same content)."""
    if old is None or old.get("immutable") is not True:
        return []
    errs = []
    if obj.get("immutable") is not True:
        errs.append(FieldError.forbidden("immutable", IMMUTABLE_SET))
    for name in fields:
        if (obj.get(name) or None) != (old.get(name) or None):
            errs.append(FieldError.forbidden(name, IMMUTABLE_SET))
    return errs


class ConfigMapStrategy(Strategy):
    """``ValidateConfigMap``'s key rules (pkg/apis/core/validation): every key of
    ``data`` and of ``binaryData`` is a config key (``IsConfigMapKey``), and no key is
    in both (``data[<key>]: Invalid value: "<key>": duplicate of key present in
    binaryData``); ``data``'s errors first, each map's keys in sorted order; then the
    1 MiB total of both (``[]: Too long: may not be more than 1048576 bytes``). An
    update of an immutable ConfigMap may change neither ``immutable``, ``data`` nor
    ``binaryData`` (``ValidateConfigMapUpdate``'s Forbidden errors, first)."""

    prunes_unknown_fields = False  # typed_decode does it
    offload_safe = True  # its hooks read and change only the object (Strategy.offload_safe)

    def typed_decode(self, obj: JSON, version: str) -> list[str] | None:
        """Decode into ``v1.ConfigMap`` (raises ``ValueError`` with the decoder's text):
        unknown fields dropped and returned, ``null`` data values empty, ``binaryData``
        base64 as Go reads and writes it."""
        unknown: list[str] = core_decoder().decode(obj, DEFINITION)
        null_to_empty(obj, "data")
        canonical_bytes(obj, "binaryData")
        return unknown

    def validate(self, obj: JSON, old: JSON | None) -> list[FieldError]:
        errs = immutable_errors(obj, old, ("data", "binaryData"))
        data, binary = obj.get("data"), obj.get("binaryData")
        size = config_map_size_errors(data, binary)
        if not isinstance(binary, dict) or not binary or not isinstance(data, dict):
            return (
                errs
                + validate_config_keys(data, "data")
                + validate_config_keys(binary, "binaryData")
                + size
            )
        for key in sorted(k for k in data if isinstance(k, str)):  # key by key, as kube
            path = f"data[{key}]"
            errs.extend(FieldError.invalid(path, key, msg) for msg in is_config_map_key(key))
            if key in binary:
                errs.append(FieldError.invalid(path, key, "duplicate of key present in binaryData"))
        errs.extend(validate_config_keys(binary, "binaryData"))
        return errs + size

    def to_storage(self, obj: JSON) -> JSON:
        for field in ("data", "binaryData"):
            if obj.get(field) == {}:
                del obj[field]
        struct_order(obj, ("immutable", "data", "binaryData"))
        return obj


def resource_type() -> ServedResource:
    return ServedResource(
        group="",
        resource="configmaps",
        kind="ConfigMap",
        list_kind="ConfigMapList",
        singular="configmap",
        namespaced=True,
        versions=["v1"],
        storage_version="v1",
        short_names=["cm"],
        strategic_kind="ConfigMap",
        strategy=ConfigMapStrategy(
            columns=[PrinterColumn("Data", "string", ".data"), AGE],
            cells=lambda o: [len(o.get("data") or {}) + len(o.get("binaryData") or {}), age(o)],
        ),
        schemas={
            "v1": object_schema(
                "ConfigMap holds configuration data for pods to consume.",
                {
                    "data": STRING_MAP,
                    "binaryData": BYTES_MAP,
                    "immutable": {"type": "boolean"},
                },
            )
        },
    )
