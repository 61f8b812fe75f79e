"""Custom resources: the strategy of the kinds CRDs declare, and the resource type an
Established CRD serves (apiextensions-apiserver's ``customResourceStrategy``).

Every served version shares one storage space; with conversion strategy ``None`` only
``apiVersion`` differs, rewritten on the way in and out. With strategy ``Webhook`` the
strategy carries the CRD's ``WebhookClientConfig`` and the server converts objects in
any other version through that webhook (``apiserver.conversion_webhook``); the
synchronous ``to_storage``/``from_storage`` below still only rewrite ``apiVersion``, for
the callers that address the storage version. The schema engine
(``SchemaAdmission``) defaults, prunes and validates; the strategy keeps the rest:
status and generation rules, finalizer warnings, field selectors from
``selectableFields`` and Tables from ``additionalPrinterColumns``.
"""

from __future__ import annotations

import base64
import binascii
import ssl
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from kubewerk.apiserver.decode import may_hold_floats
from kubewerk.apiserver.discovery import sorted_versions, version_priority
from kubewerk.apiserver.registry import ScaleSpec, ServedResource, VersionSubresources
from kubewerk.apiserver.responses import WARNINGS_READ_MAX
from kubewerk.apiserver.strategy import FieldSelection, PrinterColumn, Strategy
from kubewerk.core import validation
from kubewerk.core.gofmt import go_deep_equal, json_equal
from kubewerk.core.gonumbers import as_stored
from kubewerk.core.gvk import format_api_version
from kubewerk.core.selectors import convert_custom_field_label, custom_resource_field_set

JSON = dict[str, Any]

_AGE = PrinterColumn("Age", "date", ".metadata.creationTimestamp")
"""The column of a version that declares no ``additionalPrinterColumns``."""


@dataclass(frozen=True, slots=True)
class WebhookClientConfig:
    """``spec.conversion.webhook`` of a CRD with strategy ``Webhook``, as read once when the
    CRD is served: a ``url``, or a ``service`` (namespace, name, port, path); the PEM
    ``caBundle`` (None: the system roots) and the ``conversionReviewVersions`` in order.
    ``ca_error`` is set when the caBundle is not base64 (every call then fails)."""

    crd_name: str
    url: str | None
    service_namespace: str
    service_name: str
    service_port: int
    service_path: str
    ca_pem: bytes | None
    review_versions: tuple[str, ...]
    ca_error: str | None = None
    _contexts: dict[str, ssl.SSLContext] = field(
        default_factory=dict, compare=False, hash=False, repr=False
    )

    def context(self) -> ssl.SSLContext:
        """The TLS client context trusting the caBundle, made on first use and kept (the
        config is replaced when the CRD changes). ``ssl.SSLError``/``ValueError`` when the
        bundle holds no usable certificate."""
        ctx = self._contexts.get("ctx")
        if ctx is None:
            from kubewerk.apiserver.admission_chain.httpclient import client_context

            ctx = self._contexts["ctx"] = client_context(self.ca_pem)
        return ctx

    @classmethod
    def from_crd(cls, crd: JSON) -> WebhookClientConfig | None:
        """The webhook of ``crd``'s conversion (None unless the strategy is ``Webhook``)."""
        spec = crd.get("spec") or {}
        conversion = spec.get("conversion")
        if not isinstance(conversion, dict) or conversion.get("strategy") != "Webhook":
            return None
        webhook = _mapping(conversion.get("webhook"))
        client = _mapping(webhook.get("clientConfig"))
        service = _mapping(client.get("service"))
        ca_pem: bytes | None = None
        ca_error: str | None = None
        ca = client.get("caBundle")
        if ca:
            try:
                ca_pem = base64.b64decode(str(ca), validate=True)
            except (binascii.Error, ValueError) as exc:
                ca_error = str(exc)
        versions = webhook.get("conversionReviewVersions")
        port = service.get("port")
        return cls(
            crd_name=str((crd.get("metadata") or {}).get("name") or ""),
            url=str(client["url"]) if client.get("url") else None,
            service_namespace=str(service.get("namespace") or ""),
            service_name=str(service.get("name") or ""),
            service_port=port if isinstance(port, int) and not isinstance(port, bool) else 443,
            service_path=str(service.get("path") or ""),
            ca_pem=ca_pem,
            review_versions=tuple(str(v) for v in versions if isinstance(v, str))
            if isinstance(versions, list)
            else (),
            ca_error=ca_error,
        )


def _mapping(value: Any) -> JSON:
    """``value`` if it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


class CustomResourceStrategy(Strategy):
    """The strategy of one custom resource type.

    ``storage_api_version`` is what stored objects carry; ``status_api_versions`` the
    apiVersions whose version declares the status subresource (kube builds one strategy
    per version: the hooks read the version from the object's ``apiVersion``, which the
    REST layer has set to the request's before it calls them); ``columns`` and
    ``selectable_fields`` are per served version, as the CRD declares them (selectable
    fields as paths without the leading dot). ``conversion_webhook`` is the CRD's
    conversion webhook (None for strategy ``None``).
    """

    prunes_unknown_fields: ClassVar[bool] = False  # the structural schema prunes
    allow_unconditional_update: ClassVar[bool] = False
    offload_safe: ClassVar[bool] = True  # hooks read and change only the object

    def __init__(
        self,
        *,
        storage_api_version: str,
        namespaced: bool,
        status_api_versions: frozenset[str],
        columns: dict[str, list[PrinterColumn]],
        selectable_fields: dict[str, list[str]],
        conversion_webhook: WebhookClientConfig | None = None,
    ) -> None:
        super().__init__()
        self.conversion_webhook = conversion_webhook
        self._storage_api_version = storage_api_version
        self._namespaced = namespaced
        self._status_api_versions = status_api_versions
        self._columns_of = {
            version: tuple(_described(c) for c in (cols or [_AGE]))
            for version, cols in columns.items()
        }
        self._selectable = selectable_fields

    def prepare_for_create(self, obj: JSON) -> None:
        """A create through a version with the status subresource drops ``status``."""
        if obj.get("apiVersion") in self._status_api_versions:
            obj.pop("status", None)
        obj["metadata"]["generation"] = 1

    def generation_changed(self, new: JSON, old: JSON) -> bool:
        """Anything outside metadata changed (and outside status, when ``new``'s version
        has the status subresource), as kube's ``Semantic.DeepEqual`` of the unstructured
        contents sees it: the request's float64 ``1.0`` differs from the stored int64
        ``1`` (both still hold them at this point), so that write bumps the generation.
        The cheap value comparison decides unless it finds no change in a request whose
        values may hold floats."""
        with_status = new.get("apiVersion") in self._status_api_versions
        skip = ("metadata", "status") if with_status else ("metadata",)
        keys = (new.keys() | old.keys()) - set(skip)
        if any(not json_equal(new.get(k), old.get(k)) for k in keys):
            return True
        return may_hold_floats() and any(not go_deep_equal(new.get(k), old.get(k)) for k in keys)

    def warnings(self, obj: JSON, old: JSON | None) -> Sequence[str]:
        meta = obj.get("metadata") or {}
        old_finalizers = (
            ((old.get("metadata") or {}).get("finalizers")) if old is not None else None
        )
        # the response carries a few kilobytes of warnings: only those are worked out
        return validation.finalizer_warnings(
            meta.get("finalizers") or [], old_finalizers, limit=WARNINGS_READ_MAX
        )

    def to_storage(self, obj: JSON) -> JSON:
        """The storage version's ``apiVersion``, and numbers as kube-apiserver's storage
        round trip leaves them (``gonumbers.as_stored``: ``1.0`` is stored and answered as
        ``1``), walked only when the request's values may hold floats."""
        obj["apiVersion"] = self._storage_api_version
        if may_hold_floats():
            as_stored(obj)
        return obj

    def from_storage(self, obj: JSON, api_version: str) -> JSON:
        if obj.get("apiVersion") != api_version:
            obj = dict(obj)
            obj["apiVersion"] = api_version
        return obj

    def field_selector(self, version: str) -> FieldSelection:
        namespaced = self._namespaced
        selectable = self._selectable.get(version, [])
        return FieldSelection(
            lambda label: convert_custom_field_label(
                label, namespaced=namespaced, selectable_fields=selectable
            ),
            lambda obj: custom_resource_field_set(
                obj, namespaced=namespaced, selectable_fields=selectable
            ),
        )

    def columns(self, version: str) -> Sequence[PrinterColumn]:
        return self._columns_of.get(version) or (_described(_AGE),)

    def selectable_fields(self, version: str) -> Sequence[str]:
        """``version``'s ``selectableFields`` paths without the leading dot, in the CRD's
        order (what the OpenAPI documents publish as ``x-kubernetes-selectable-fields``)."""
        return tuple(self._selectable.get(version, ()))


def _described(col: PrinterColumn) -> PrinterColumn:
    """``col`` with apiextensions' default description when the CRD gives none."""
    if col.description:
        return col
    return PrinterColumn(
        col.name,
        col.type,
        col.json_path,
        f"Custom resource definition column (in JSONPath format): {col.json_path}",
        col.format,
        col.priority,
    )


def crd_to_type(crd: JSON) -> ServedResource | None:
    """The served resource type a CRD declares (None if it serves no version)."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    versions = [v for v in spec.get("versions") or [] if isinstance(v, dict)]
    served = [v["name"] for v in versions if v.get("served")]
    if not served:
        return None
    storage = next((v["name"] for v in versions if v.get("storage")), served[0])
    kind = names.get("kind", "")
    group = spec.get("group", "")
    namespaced = spec.get("scope") == "Namespaced"
    subresources: dict[str, VersionSubresources] = {}
    printer: dict[str, list[PrinterColumn]] = {}
    selectable: dict[str, list[str]] = {}
    schemas: dict[str, JSON] = {}
    deprecated: dict[str, str] = {}
    for v in versions:
        subresources[v["name"]] = _subresources(v.get("subresources"))
        printer[v["name"]] = [
            PrinterColumn(
                c.get("name", ""),
                c.get("type", "string"),
                c.get("jsonPath", ""),
                c.get("description", ""),
                c.get("format", ""),
                int(c.get("priority", 0) or 0),
            )
            for c in v.get("additionalPrinterColumns") or []
            if isinstance(c, dict)
        ]
        selectable[v["name"]] = [
            str(f.get("jsonPath", "")).lstrip(".")
            for f in v.get("selectableFields") or []
            if isinstance(f, dict)
        ]
        schema = (v.get("schema") or {}).get("openAPIV3Schema")
        if isinstance(schema, dict):
            schemas[v["name"]] = schema
        if v.get("deprecated"):
            deprecated[v["name"]] = v.get("deprecationWarning") or default_deprecation_warning(
                v["name"], group, kind, versions
            )
    meta = crd.get("metadata") or {}
    return ServedResource(
        group=group,
        resource=names.get("plural", ""),
        kind=kind,
        list_kind=names.get("listKind") or f"{kind}List",
        singular=names.get("singular") or kind.lower(),
        namespaced=namespaced,
        versions=sorted_versions(served),
        storage_version=storage,
        short_names=list(names.get("shortNames") or []),
        categories=list(names.get("categories") or []),
        version_subresources=subresources,
        builtin=False,
        strategic_kind=None,
        schemas=schemas,
        deprecated=deprecated,
        crd_name=meta.get("name"),
        crd_uid=meta.get("uid"),
        crd_generation=int(meta.get("generation", 0) or 0),
        strategy=CustomResourceStrategy(
            storage_api_version=format_api_version(group, storage),
            namespaced=namespaced,
            status_api_versions=frozenset(
                format_api_version(group, name) for name, sub in subresources.items() if sub.status
            ),
            columns=printer,
            selectable_fields=selectable,
            conversion_webhook=WebhookClientConfig.from_crd(crd),
        ),
    )


def _subresources(declared: Any) -> VersionSubresources:
    """One version's ``subresources`` (``GetSubresourcesForVersion``): ``status`` when
    it is there (``{}``), ``scale`` with its paths (validation has required both replica
    paths)."""
    if not isinstance(declared, dict):
        return VersionSubresources()
    scale = declared.get("scale")
    return VersionSubresources(
        status=isinstance(declared.get("status"), dict),
        scale=ScaleSpec(
            str(scale.get("specReplicasPath") or ".spec.replicas"),
            str(scale.get("statusReplicasPath") or ".status.replicas"),
            scale.get("labelSelectorPath") or None,
        )
        if isinstance(scale, dict)
        else None,
    )


def default_deprecation_warning(version: str, group: str, kind: str, versions: list[JSON]) -> str:
    """apiextensions' default warning for a deprecated version: ``G/V K is deprecated``,
    plus ``; use G/V2 K`` naming the newest served, non-deprecated, newer version."""
    message = f"{group}/{version} {kind} is deprecated"
    newer = [
        v["name"]
        for v in versions
        if v.get("served")
        and not v.get("deprecated")
        and version_priority(v["name"]) < version_priority(version)
    ]
    if newer:
        message += f"; use {group}/{sorted_versions(newer)[0]} {kind}"
    return message
