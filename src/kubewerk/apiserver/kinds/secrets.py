"""``v1`` Secret: ``type`` defaults to ``Opaque`` and ``stringData`` is folded into
``data`` (base64) before storage, so it is never stored or served; ``data``'s keys
(``stringData``'s among them, as ``data[<key>]``) are config keys."""

from __future__ import annotations

import base64
from typing import Any

from kubewerk.apiserver.kinds.configmaps import immutable_errors
from kubewerk.apiserver.kinds.schemas import BYTES_MAP, STRING_MAP, object_schema
from kubewerk.apiserver.registry import ServedResource
from kubewerk.apiserver.strategy import AGE, PrinterColumn, Strategy
from kubewerk.core.errors import FieldError
from kubewerk.core.meta import age
from kubewerk.core.validation import validate_config_keys

JSON = dict[str, Any]


def _fold_string_data(secret: JSON) -> None:
    secret.setdefault("type", "Opaque")
    string_data = secret.pop("stringData", None)
    if isinstance(string_data, dict):
        data = secret.setdefault("data", {})
        for k, v in string_data.items():
            data[k] = base64.b64encode(str(v).encode()).decode()


class SecretStrategy(Strategy):
    """A create or an update defaults ``type`` and folds ``stringData`` into ``data``."""

    def prepare_for_create(self, obj: JSON) -> None:
        super().prepare_for_create(obj)
        _fold_string_data(obj)

    def prepare_for_update(self, new: JSON, old: JSON) -> None:
        _fold_string_data(new)  # type defaulted as on every decode (SetDefaults_Secret)

    def validate(self, obj: JSON, old: JSON | None) -> list[FieldError]:
        """``ValidateSecret``'s key rule: every key of ``data`` is a config key
        (``IsConfigMapKey``). ``stringData`` is in ``data`` by now, as kube's conversion
        puts it there before validation. An update (``ValidateSecretUpdate``) may not
        change ``type``, and once the old Secret is immutable neither ``immutable`` nor
        ``data``."""
        errs: list[FieldError] = []
        if old is not None and obj.get("type") != old.get("type"):
            errs.append(FieldError.invalid("type", obj.get("type"), "field is immutable"))
        errs.extend(immutable_errors(obj, old, ("data",)))
        return errs + validate_config_keys(obj.get("data"), "data")


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
