"""CRD acceptance: ``validate_crd``, every check the apiserver makes before storing a CRD.

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

from typing import Any

from kubewerk.core.errors import FieldError
from kubewerk.core.gofmt import go_deep_equal

from ._crd_internal import (
    CrdSpec,
    ValidationOptions,
    apply_v1_defaults,
    as_dict,
    as_str,
    schema_has,
)
from ._crd_openapi import OPENAPI_TYPES, has_non_atomic_set, map_list_keys_errors
from ._crd_spec import (
    validate_api_approval,
    validate_meta,
    validate_names,
    validate_spec,
    validate_spec_update,
    validate_stored_versions,
)
from ._crd_structural import is_non_structural
from ._validator import ROOT_FIELD

__all__ = ["validate_crd"]


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
    errs = _with_cost_errors(errs, spec, old_spec)
    if spec.preserve_unknown and not (
        isinstance(old, dict)
        and isinstance(old.get("spec"), dict)
        and old["spec"].get("preserveUnknownFields") is True
    ):
        errs.append(
            FieldError.invalid(
                "spec.preserveUnknownFields",
                True,
                "cannot set to true, set x-kubernetes-preserve-unknown-fields "
                "to true in spec.versions[*].schema instead",
            )
        )
    return errs


def _schema_paths(spec: CrdSpec) -> list[tuple[str, str, dict[str, Any]]]:
    """(version whose schema this is, ``….openAPIV3Schema`` path, schema) of each schema:
    the top-level one (kube names it after the first version) or each version's."""
    out: list[tuple[str, str, dict[str, Any]]] = []
    names = [as_str(v.get("name")) for v in spec.versions]
    if isinstance(spec.validation, dict) and isinstance(
        spec.validation.get("openAPIV3Schema"), dict
    ):
        out.append(
            (
                names[0] if names else "",
                "spec.validation.openAPIV3Schema",
                spec.validation["openAPIV3Schema"],
            )
        )
    for i, v in enumerate(spec.v_schema):
        if isinstance(v, dict) and isinstance(v.get("openAPIV3Schema"), dict):
            out.append(
                (names[i], f"spec.versions[{i}].schema.openAPIV3Schema", v["openAPIV3Schema"])
            )
    return out


def _version_schema(spec: CrdSpec, version: str) -> Any:
    if spec.validation is not None:
        return spec.validation
    for i, v in enumerate(spec.versions):
        if v.get("name") == version:
            return spec.v_schema[i]
    return None


def _with_cost_errors(
    errs: list[FieldError], spec: CrdSpec, old_spec: CrdSpec | None
) -> list[FieldError]:
    """``errs`` with kube-apiserver's CEL cost errors of each schema added: after that
    schema's other errors (kube reports them with its CEL errors), only for a schema
    whose rules kube would compile (structural, no schema error below the rules).
    On update, a version whose schema is unchanged is held only to the per-CRD total.
    """
    from ._structural import Structural
    from .cel.cost_limits import schema_costs

    for version, sp, schema in _schema_paths(spec):
        if not schema_has(schema, lambda n: bool(n.get("x-kubernetes-validations"))):
            continue
        under = [i for i, e in enumerate(errs) if e.field == sp or e.field.startswith(sp + ".")]
        if any(".x-kubernetes-validations[" not in errs[i].field for i in under):
            continue  # kube compiles no rule of a schema with schema errors
        costs = schema_costs(Structural(schema), sp)
        unchanged = old_spec is not None and go_deep_equal(
            _version_schema(spec, version), _version_schema(old_spec, version)
        )
        cost_errs = costs.errors(sp, per_expression=not unchanged)
        if not cost_errs:
            continue
        at = under[-1] + 1 if under else len(errs)
        errs = errs[:at] + cost_errs + errs[at:]
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
