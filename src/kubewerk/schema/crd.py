"""CRD acceptance (``validate_crd``) and per-version schema compilation with a cache.

``validate_crd`` applies what ``ValidateCustomResourceDefinition`` (create) and
``ValidateCustomResourceDefinitionUpdate`` do in k8s.io/apiextensions-apiserver, on the
object after v1 defaulting and conversion to the internal version: when every version
carries the same schema (or subresources, printer columns), the apiserver moves it to
``spec.validation`` (``spec.subresources``, ``spec.additionalPrinterColumns``), and the
error paths say so (``spec.validation.openAPIV3Schema.properties[spec].type``).

The checks live beside this module: the internal view and which checks apply in
``_crd_internal``, spec and metadata in ``_crd_spec`` (conversion in
``_crd_conversion``), each version's schema in ``_crd_schema``, which runs the
structural-schema rules (``_crd_structural``) and the OpenAPI and CEL rules
(``_crd_openapi``).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Final

from kubewerk.core.errors import FieldError
from kubewerk.core.gofmt import GoText

from ._crd_internal import (
    CrdSpec,
    ValidationOptions,
    apply_v1_defaults,
    as_dict,
    as_list,
    as_str,
    schema_has,
)
from ._crd_openapi import (
    OPENAPI_TYPES,
    VALIDATION_REASONS,
    has_non_atomic_set,
    map_list_keys_errors,
)
from ._crd_schema import ALLOWED_AT_ROOT_WITH_STATUS
from ._crd_spec import (
    API_APPROVAL_ANNOTATION,
    PRINTER_COLUMN_FORMATS,
    PRINTER_COLUMN_TYPES,
    validate_api_approval,
    validate_meta,
    validate_names,
    validate_spec,
    validate_spec_update,
    validate_stored_versions,
)
from ._crd_structural import is_non_structural
from ._validator import ROOT_FIELD
from .compiled import CompiledSchema, SchemaError

__all__ = [
    "ALLOWED_AT_ROOT_WITH_STATUS",
    "API_APPROVAL_ANNOTATION",
    "OPENAPI_TYPES",
    "PRINTER_COLUMN_FORMATS",
    "PRINTER_COLUMN_TYPES",
    "VALIDATION_REASONS",
    "GoText",
    "compile_crd_version",
    "validate_crd",
]


def validate_crd(crd: dict[str, Any], old: dict[str, Any] | None = None) -> list[FieldError]:
    """Every check the apiserver applies before accepting an apiextensions.k8s.io/v1 CRD.

    ``old`` given means an update from ``old``. Returns the field errors with
    Kubernetes' paths and messages (empty list: accepted). A document that is not an
    ``apiextensions.k8s.io/v1`` ``CustomResourceDefinition`` (e.g. the removed v1beta1)
    is rejected with an error on ``apiVersion``/``kind``.
    """
    if not isinstance(crd, dict):
        return [FieldError.invalid(ROOT_FIELD, "", "a CustomResourceDefinition must be an object")]
    errs: list[FieldError] = []
    api_version = crd.get("apiVersion")
    if api_version != "apiextensions.k8s.io/v1":
        errs.append(
            FieldError.not_supported("apiVersion", api_version, ["apiextensions.k8s.io/v1"])
        )
    if crd.get("kind") != "CustomResourceDefinition":
        errs.append(FieldError.not_supported("kind", crd.get("kind"), ["CustomResourceDefinition"]))
    if errs:
        return errs
    obj = apply_v1_defaults(crd, old)
    spec = CrdSpec(obj["spec"])
    old_spec = CrdSpec(apply_v1_defaults(old, old)["spec"]) if isinstance(old, dict) else None
    meta = as_dict(obj.get("metadata"))
    opts = _validation_options(old_spec, old)

    errs.extend(validate_meta(meta, spec, old))
    errs.extend(validate_spec(spec, opts, "spec"))
    if old_spec is not None:
        errs.extend(validate_spec_update(spec, old_spec, opts))
    status = as_dict(obj.get("status"))
    accepted = status.get("acceptedNames")
    if isinstance(accepted, dict):
        errs.extend(validate_names(accepted, "status.acceptedNames"))
    errs.extend(validate_stored_versions(status.get("storedVersions") or [], spec.versions))
    errs.extend(validate_api_approval(meta, spec, old))
    if spec.preserve_unknown and not (
        isinstance(old, dict)
        and isinstance(old.get("spec"), dict)
        and old["spec"].get("preserveUnknownFields") is True
    ):
        errs.append(
            FieldError.invalid(
                "spec.preserveUnknownFields",
                True,
                "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead",
            )
        )
    return errs


def _validation_options(old_spec: CrdSpec | None, old: dict[str, Any] | None) -> ValidationOptions:
    """The checks that apply: all of them on create; on update, only those the old CRD
    (``old_spec``, ``old``) passes, plus immutable scope and kind once it is established."""
    opts = ValidationOptions()
    if old_spec is None:
        return opts
    old_schemas = old_spec.schemas()
    opts.require_structural = not any(is_non_structural(s) for s in old_schemas)
    opts.require_valid_type = not any(schema_has(s, _has_unknown_type) for s in old_schemas)
    opts.require_atomic_set = not any(schema_has(s, has_non_atomic_set) for s in old_schemas)
    opts.require_map_list_keys = not any(
        schema_has(s, lambda n: bool(map_list_keys_errors(n, ""))) for s in old_schemas
    )
    conds = (old or {}).get("status", {}).get("conditions") or []
    opts.immutable_names = any(
        isinstance(c, dict) and c.get("type") == "Established" and c.get("status") == "True"
        for c in conds
    )
    return opts


def _has_unknown_type(node: dict[str, Any]) -> bool:
    """A ``type`` that is set but not an OpenAPI type."""
    t = node.get("type")
    return isinstance(t, str) and bool(t) and t not in OPENAPI_TYPES


_CACHE_LIMIT: Final = 512
_cache: OrderedDict[tuple[str, str, str], CompiledSchema] = OrderedDict()
_cache_lock = threading.Lock()


def compile_crd_version(crd: dict[str, Any], version: str) -> CompiledSchema:
    """The compiled schema of ``spec.versions[name=version].schema.openAPIV3Schema``.

    Cached per (metadata.uid, metadata.generation or resourceVersion, version), the
    512 most recently used; a CRD without a uid, or without both generation and
    resourceVersion, is compiled afresh on every call. Raises
    :class:`SchemaError` if the version does not exist, has no schema, or the schema
    (or one of its CEL rules) does not compile.
    """
    meta = as_dict(crd.get("metadata"))
    uid = as_str(meta.get("uid"))
    gen = meta.get("generation")
    stamp = str(gen) if gen is not None else as_str(meta.get("resourceVersion"))
    key: tuple[str, str, str] | None = (uid, stamp, version) if uid and stamp else None
    if key is not None:
        with _cache_lock:
            hit = _cache.get(key)
            if hit is not None:
                _cache.move_to_end(key)
                return hit
    spec = as_dict(crd.get("spec"))
    versions = as_list(spec.get("versions"))
    for i, v in enumerate(versions):
        if isinstance(v, dict) and v.get("name") == version:
            schema = (
                (v.get("schema") or {}).get("openAPIV3Schema")
                if isinstance(v.get("schema"), dict)
                else None
            )
            if not isinstance(schema, dict):
                raise SchemaError(
                    [FieldError.required(f"spec.versions[{i}].schema.openAPIV3Schema")]
                )
            compiled = CompiledSchema(schema)
            if key is not None:
                with _cache_lock:
                    _cache[key] = compiled
                    if len(_cache) > _CACHE_LIMIT:
                        _cache.popitem(last=False)
            return compiled
    raise SchemaError(
        [
            FieldError.not_supported(
                "spec.versions",
                version,
                [as_str(v.get("name")) for v in versions if isinstance(v, dict)],
            )
        ]
    )
