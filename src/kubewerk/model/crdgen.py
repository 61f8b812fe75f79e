"""CRD generation: ``crd_for(Model, ...)`` → an ``apiextensions.k8s.io/v1`` object.

The output is structural (every node typed, no ``$ref``, no ``oneOf``; int-or-string
as ``anyOf: [integer, string]`` with ``x-kubernetes-int-or-string``, exactly as
Kubernetes documents it) and stable: the same classes give the same dict, and
:func:`crd_yaml` the same bytes (keys sorted, block style, no anchors).

A kind whose served versions have different schemas gets ``spec.conversion`` with
strategy ``Webhook`` (see :class:`ConversionWebhook`): with the default strategy
``None`` the API server would only rewrite ``apiVersion`` and serve objects stored as
one version unchanged as the others.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import yaml

from kubewerk.core.jsoncopy import copy_json
from kubewerk.core.validation import is_dns1123_subdomain
from kubewerk.model._naming import version_priority_key
from kubewerk.model._schemagen import resource_schema
from kubewerk.model.errors import ModelDefinitionError
from kubewerk.model.ref_fields import REFERENCES_ANNOTATION, references_annotation
from kubewerk.model.resource import AnyResource, KindInfo, provide_schema_compiler, versions_of
from kubewerk.schema import CompiledSchema, compile_crd_version

__all__ = [
    "ConversionWebhook",
    "crd_for",
    "crd_yaml",
    "crds_for",
    "dump_yaml",
    "schema_for",
    "storage_version",
]


@dataclass(frozen=True, slots=True)
class ConversionWebhook:
    """The service the API server calls to convert a kind's objects between versions.

    :func:`crd_for` writes it as ``spec.conversion`` (strategy ``Webhook``,
    ``conversionReviewVersions: [v1]``) for every kind whose served versions have
    different schemas. The defaults are the placeholder of kubebuilder's kustomize
    layout — service ``webhook-service`` in namespace ``system``, path ``/convert``, port
    443 — which kustomize's ``namespace`` and ``namePrefix`` rewrite into the operator's
    own; name the real service here (or with ``kubewerk gen crd --conversion-webhook``)
    when the CRD is applied as generated. Raises ``ValueError`` for a reference the API
    server would refuse.
    """

    namespace: str = "system"
    name: str = "webhook-service"
    path: str = "/convert"
    port: int | None = None
    """None: Kubernetes' default, 443."""

    def __post_init__(self) -> None:
        if not self.namespace or not self.name:
            raise ValueError("a conversion webhook service needs a namespace and a name")
        if not self.path.startswith("/"):
            raise ValueError(f"conversion webhook path {self.path!r} must start with '/'")
        segments = self.path[1:].removesuffix("/").split("/") if self.path != "/" else []
        for segment in segments:
            if not segment or is_dns1123_subdomain(segment):
                raise ValueError(
                    f"conversion webhook path {self.path!r}: each segment must be a DNS-1123 "
                    "subdomain (lower-case letters, digits, '-' and '.')"
                )
        if self.port is not None and not 1 <= self.port <= 65535:
            raise ValueError(f"conversion webhook port {self.port} is not between 1 and 65535")

    @classmethod
    def parse(cls, text: str) -> ConversionWebhook:
        """``NAMESPACE/NAME[:PORT][/PATH]``, e.g. ``ops/widgets-webhook:9443/convert``
        (path ``/convert`` when left out)."""
        namespace, _, rest = text.partition("/")
        service, slash, path = rest.partition("/")
        name, colon, port_text = service.partition(":")
        if not namespace or not name or (colon and not port_text.isdigit()):
            raise ValueError(
                f"conversion webhook {text!r}: expected NAMESPACE/NAME[:PORT][/PATH], "
                "e.g. ops/widgets-webhook:9443/convert"
            )
        return cls(
            namespace=namespace,
            name=name,
            path=f"/{path}" if slash else "/convert",
            port=int(port_text) if colon else None,
        )

    def to_schema(self) -> dict[str, Any]:
        """The ``spec.conversion`` of a CRD that converts through this service."""
        service: dict[str, Any] = {
            "name": self.name,
            "namespace": self.namespace,
            "path": self.path,
        }
        if self.port is not None:
            service["port"] = self.port
        return {
            "strategy": "Webhook",
            "webhook": {"clientConfig": {"service": service}, "conversionReviewVersions": ["v1"]},
        }


def schema_for(model: type[AnyResource]) -> dict[str, Any]:
    """The ``openAPIV3Schema`` of one resource class (a fresh, unshared dict)."""
    return resource_schema(model).schema


def _version_entry(model: type[AnyResource], info: KindInfo, storage: bool) -> dict[str, Any]:
    fragment = resource_schema(model)
    entry: dict[str, Any] = {
        "name": info.version,
        "served": info.served,
        "storage": storage,
        "schema": {"openAPIV3Schema": fragment.schema},
    }
    columns: list[dict[str, Any]] = [c.to_schema(path, t) for path, c, t in fragment.columns]
    for col in info.printer_columns:
        assert col.json_path is not None
        columns.append(col.to_schema(col.json_path, col.type or "string"))
    if columns:
        names = [c["name"] for c in columns]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ModelDefinitionError(f"{model.__name__}: duplicate printer column names {dupes}")
        entry["additionalPrinterColumns"] = columns
    if info.deprecated:
        entry["deprecated"] = True
        if info.deprecation_warning:
            entry["deprecationWarning"] = info.deprecation_warning
    selectable = [path for path, _type in fragment.selectable]
    selectable.extend(info.selectable_fields)
    if selectable:
        if len(selectable) > 8:
            raise ModelDefinitionError(
                f"{model.__name__}: Kubernetes allows at most "
                f"8 selectable fields, got {len(selectable)}"
            )
        entry["selectableFields"] = [{"jsonPath": p} for p in dict.fromkeys(selectable)]
    subresources: dict[str, Any] = {}
    if info.status_subresource:
        subresources["status"] = {}
    if info.scale is not None:
        subresources["scale"] = info.scale.to_schema()
    if subresources:
        entry["subresources"] = subresources
    return entry


def storage_version(models: Iterable[type[AnyResource]]) -> type[AnyResource]:
    """The class marked ``storage=True`` (or the only one); the hub for conversions."""
    models = list(models)
    marked = [m for m in models if m.kind_info().storage]
    if len(models) == 1 and models[0].kind_info().storage is not False:
        return models[0]
    if len(marked) != 1:
        names = ", ".join(m.kind_info().version for m in models)
        raise ModelDefinitionError(
            f"{models[0].kind_info().kind}: exactly one of the versions ({names}) must be "
            f"declared storage=True, found {len(marked)}"
        )
    return marked[0]


def _collect(models: tuple[type[AnyResource], ...]) -> list[type[AnyResource]]:
    if not models:
        raise ValueError("crd_for needs at least one resource class")
    first = models[0].kind_info()
    if len(models) == 1:
        registered = versions_of(first.group, first.kind)
        registered[first.version] = models[0]
        chosen = list(registered.values())
    else:
        chosen = list(models)
    seen: dict[str, type[AnyResource]] = {}
    for model in chosen:
        info = model.kind_info()
        if (info.group, info.kind) != (first.group, first.kind):
            raise ModelDefinitionError(
                f"{model.__name__}: {info.kind}.{info.group} is not {first.kind}.{first.group}; "
                "one CRD holds the versions of one kind"
            )
        if info.version in seen and seen[info.version] is not model:
            raise ModelDefinitionError(
                f"{model.__name__}: version {info.version} is "
                f"also defined by {seen[info.version].__name__}"
            )
        seen[info.version] = model
    return sorted(seen.values(), key=lambda m: version_priority_key(m.kind_info().version))


def crd_for(*models: type[AnyResource], webhook: ConversionWebhook | None = None) -> dict[str, Any]:
    """The CustomResourceDefinition for one kind.

    With one class, every registered version of its kind is included (the class
    itself standing for its version); with several, exactly those. Names, scope, short
    names and categories come from the storage version, and the other versions must
    agree with it. Versions are listed in Kubernetes' priority order (v1, v1beta1, …).
    When the served versions' schemas differ (descriptions aside) the CRD converts
    through ``webhook`` (default :class:`ConversionWebhook`'s placeholder service).
    A kind with :class:`~kubewerk.model.refs.Ref` fields gets the annotation
    ``kubewerk.dev/references`` listing them (:mod:`kubewerk.model.ref_fields`): the CRD
    schema has no room for extensions of our own, and tools read refs from there.
    """
    chosen = _collect(models)
    hub = storage_version(chosen)
    names_info = hub.kind_info()
    for model in chosen:
        info = model.kind_info()
        for attr in ("plural", "singular", "list_kind", "scope", "short_names", "categories"):
            if getattr(info, attr) != getattr(names_info, attr):
                raise ModelDefinitionError(
                    f"{model.__name__}: {attr} {getattr(info, attr)!r} differs from the storage "
                    f"version's {getattr(names_info, attr)!r}"
                )
    names: dict[str, Any] = {
        "kind": names_info.kind,
        "listKind": names_info.list_kind,
        "plural": names_info.plural,
        "singular": names_info.singular,
    }
    if names_info.short_names:
        names["shortNames"] = list(names_info.short_names)
    if names_info.categories:
        names["categories"] = list(names_info.categories)
    versions = [_version_entry(m, m.kind_info(), m is hub) for m in chosen]
    crd: dict[str, Any] = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": names_info.crd_name},
        "spec": {
            "group": names_info.group,
            "names": names,
            "scope": names_info.scope,
            "versions": versions,
        },
    }
    references = references_annotation(chosen)
    if references is not None:
        crd["metadata"]["annotations"] = {REFERENCES_ANNOTATION: references}
    # no shared sub-dicts, only JSON types
    result: dict[str, Any] = copy_json(crd)
    if _schemas_differ(result["spec"]["versions"]):
        result["spec"] = {
            "conversion": (webhook or ConversionWebhook()).to_schema(),
            **result["spec"],
        }
    return result


def _schemas_differ(versions: list[dict[str, Any]]) -> bool:
    """Whether the versions the API server reads or writes (served or storage) have
    schemas that differ other than in descriptions, so objects need converting."""
    live = [v["schema"]["openAPIV3Schema"] for v in versions if v["served"] or v["storage"]]
    if len(live) < 2:
        return False
    first = _without_descriptions(live[0])
    return any(_without_descriptions(schema) != first for schema in live[1:])


_SUBSCHEMA_KEYS = ("items", "additionalProperties", "not")
_SUBSCHEMA_LIST_KEYS = ("anyOf", "allOf", "oneOf")


def _without_descriptions(schema: Any) -> Any:
    """The schema without its nodes' ``description`` (a property named ``description``
    stays; defaults and examples are values, not schemas, and are kept as they are)."""
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "description":
            continue
        if key == "properties" and isinstance(value, dict):
            out[key] = {name: _without_descriptions(sub) for name, sub in value.items()}
        elif key in _SUBSCHEMA_KEYS:
            out[key] = _without_descriptions(value)
        elif key in _SUBSCHEMA_LIST_KEYS and isinstance(value, list):
            out[key] = [_without_descriptions(sub) for sub in value]
        else:
            out[key] = value
    return out


def crds_for(
    models: Iterable[type[AnyResource]], *, webhook: ConversionWebhook | None = None
) -> list[dict[str, Any]]:
    """One CRD per kind among ``models`` (grouping their versions), sorted by CRD name;
    ``webhook`` as for :func:`crd_for`."""
    by_kind: dict[tuple[str, str], list[type[AnyResource]]] = {}
    for model in models:
        info = model.kind_info()
        bucket = by_kind.setdefault((info.group, info.kind), [])
        if model not in bucket:
            bucket.append(model)
    crds = [
        crd_for(*group, webhook=webhook) if len(group) > 1 else crd_for(group[0], webhook=webhook)
        for group in by_kind.values()
    ]
    return sorted(crds, key=lambda c: str(c["metadata"]["name"]))


class _Dumper(yaml.SafeDumper):
    """Block style, no aliases, multi-line strings as literal blocks."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _str_representer(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    if "\n" in value:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


_Dumper.add_representer(str, _str_representer)


def dump_yaml(obj: Any) -> str:
    """Stable YAML for a CRD (or any JSON-shaped value): sorted keys, block style."""
    return yaml.dump(
        obj,
        Dumper=_Dumper,
        sort_keys=True,
        default_flow_style=False,
        allow_unicode=True,
        width=100,
        indent=2,
    )


def crd_yaml(*models: type[AnyResource], webhook: ConversionWebhook | None = None) -> str:
    """:func:`crd_for` as stable YAML text."""
    return dump_yaml(crd_for(*models, webhook=webhook))


_COMPILED: weakref.WeakKeyDictionary[type, CompiledSchema] = weakref.WeakKeyDictionary()


def _compiled_schema(model: type[AnyResource]) -> CompiledSchema:
    """The class's version of :func:`crd_for` compiled by kubewerk.schema, cached per class;
    what :meth:`Resource.compiled_schema` answers."""
    compiled = _COMPILED.get(model)
    if compiled is None:
        compiled = compile_crd_version(crd_for(model), model.kind_info().version)
        _COMPILED[model] = compiled
    return compiled


provide_schema_compiler(_compiled_schema)
