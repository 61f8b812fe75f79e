"""``v1`` ConfigMap: its Table (Data counts entries), its data keys' validation and
``immutable``."""

from __future__ import annotations

from typing import Any

from kubewerk.apiserver.kinds.schemas import BYTES_MAP, STRING_MAP, object_schema
from kubewerk.apiserver.registry import ServedResource
from kubewerk.apiserver.strategy import AGE, PrinterColumn, Strategy
from kubewerk.core.errors import FieldError
from kubewerk.core.meta import age
from kubewerk.core.validation import is_config_map_key, validate_config_keys

JSON = dict[str, Any]

IMMUTABLE_SET = "field is immutable when `immutable` is set"


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
    binaryData``); ``data``'s errors first, each map's keys in sorted order. An update of
    an immutable ConfigMap may change neither ``immutable``, ``data`` nor ``binaryData``
    (``ValidateConfigMapUpdate``'s Forbidden errors, first)."""

    def validate(self, obj: JSON, old: JSON | None) -> list[FieldError]:
        errs = immutable_errors(obj, old, ("data", "binaryData"))
        data, binary = obj.get("data"), obj.get("binaryData")
        if not isinstance(binary, dict) or not binary or not isinstance(data, dict):
            return (
                errs
                + validate_config_keys(data, "data")
                + validate_config_keys(binary, "binaryData")
            )
        for key in sorted(k for k in data if isinstance(k, str)):  # key by key, as kube
            path = f"data[{key}]"
            errs.extend(FieldError.invalid(path, key, msg) for msg in is_config_map_key(key))
            if key in binary:
                errs.append(FieldError.invalid(path, key, "duplicate of key present in binaryData"))
        errs.extend(validate_config_keys(binary, "binaryData"))
        return errs


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
