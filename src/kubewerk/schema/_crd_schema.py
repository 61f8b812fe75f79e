"""One version's schema as the apiserver accepts it: root, structure, defaults, rules.

:func:`validate_version_schema` runs the checks of ``ValidateCustomResourceDefinition``
on one ``openAPIV3Schema`` (per version, or the top-level one all versions share): what
the root may say when the status subresource is on, the structural-schema rules
(``_crd_structural``), defaults that are pruned and valid, then the OpenAPI and CEL
rules (``_crd_openapi``).
"""

from __future__ import annotations

from typing import Any, Final

from kubewerk.core.errors import FieldError
from kubewerk.core.gofmt import go_deep_equal
from kubewerk.core.jsoncopy import copy_tree

from . import _structural as st
from ._crd_internal import ValidationOptions, join_path
from ._crd_openapi import validate_openapi
from ._crd_structural import validate_structural
from ._validator import ROOT_FIELD, Validator
from .compiled import CompiledSchema

ALLOWED_AT_ROOT_WITH_STATUS: Final = (
    "Description",
    "Type",
    "Format",
    "Title",
    "Maximum",
    "ExclusiveMaximum",
    "Minimum",
    "ExclusiveMinimum",
    "MaxLength",
    "MinLength",
    "Pattern",
    "MaxItems",
    "MinItems",
    "UniqueItems",
    "MultipleOf",
    "Required",
    "Items",
    "Properties",
    "ExternalDocs",
    "Example",
    "XPreserveUnknownFields",
    "XValidations",
)
# JSONSchemaProps' Go fields in declaration order, with their JSON names.
_GO_FIELDS: Final = (
    ("ID", "id"),
    ("Schema", "$schema"),
    ("Ref", "$ref"),
    ("Description", "description"),
    ("Type", "type"),
    ("Format", "format"),
    ("Title", "title"),
    ("Default", "default"),
    ("Maximum", "maximum"),
    ("ExclusiveMaximum", "exclusiveMaximum"),
    ("Minimum", "minimum"),
    ("ExclusiveMinimum", "exclusiveMinimum"),
    ("MaxLength", "maxLength"),
    ("MinLength", "minLength"),
    ("Pattern", "pattern"),
    ("MaxItems", "maxItems"),
    ("MinItems", "minItems"),
    ("UniqueItems", "uniqueItems"),
    ("MultipleOf", "multipleOf"),
    ("Enum", "enum"),
    ("MaxProperties", "maxProperties"),
    ("MinProperties", "minProperties"),
    ("Required", "required"),
    ("Items", "items"),
    ("AllOf", "allOf"),
    ("OneOf", "oneOf"),
    ("AnyOf", "anyOf"),
    ("Not", "not"),
    ("Properties", "properties"),
    ("AdditionalProperties", "additionalProperties"),
    ("PatternProperties", "patternProperties"),
    ("Dependencies", "dependencies"),
    ("AdditionalItems", "additionalItems"),
    ("Definitions", "definitions"),
    ("ExternalDocs", "externalDocs"),
    ("Example", "example"),
    ("Nullable", "nullable"),
    ("XPreserveUnknownFields", "x-kubernetes-preserve-unknown-fields"),
    ("XEmbeddedResource", "x-kubernetes-embedded-resource"),
    ("XIntOrString", "x-kubernetes-int-or-string"),
    ("XListMapKeys", "x-kubernetes-list-map-keys"),
    ("XListType", "x-kubernetes-list-type"),
    ("XMapType", "x-kubernetes-map-type"),
    ("XValidations", "x-kubernetes-validations"),
)


_NON_POINTER_BOOLS: Final = frozenset(
    {
        "exclusiveMaximum",
        "exclusiveMinimum",
        "uniqueItems",
        "nullable",
        "x-kubernetes-embedded-resource",
        "x-kubernetes-int-or-string",
    }
)


def validate_version_schema(
    validation: Any,
    status_enabled: bool,
    opts: ValidationOptions,
    path: str,
    require_structural: bool,
) -> list[FieldError]:
    """Every check of one ``validation`` (``{"openAPIV3Schema": ...}``) at ``path``.

    In the apiserver's order: the root's fields when the status subresource is on
    (``status_enabled``), a nullable root, the structural rules (sorted by message) and,
    when structural, the defaults; then the OpenAPI rules and the CEL rules. A schema
    that passes everything also builds a validator.
    """
    errs: list[FieldError] = []
    if not isinstance(validation, dict):
        return errs
    schema = validation.get("openAPIV3Schema")
    if not isinstance(schema, dict):
        return errs
    sp = f"{path}.openAPIV3Schema"
    if status_enabled:
        errs.extend(_status_root_errors(schema, sp))
    if schema.get("nullable") is True:
        errs.append(FieldError.forbidden(f"{sp}.nullable", "nullable cannot be true at the root"))

    structural_ok = False
    ss = st.Structural(schema)
    if require_structural:
        serrs: list[FieldError] = []
        validate_structural(ss, schema, "root", sp, serrs)
        serrs.sort(key=lambda e: e.message())
        if serrs:
            errs.extend(serrs)
        else:
            derrs = _defaults_errors(ss, sp, opts)
            if derrs:
                errs.extend(derrs)
            else:
                structural_ok = True
    schema_errs, cel_errs = validate_openapi(
        schema, sp, opts, ss if structural_ok else None, structural_ok
    )
    errs.extend(schema_errs)
    errs.extend(cel_errs)
    if not errs:
        try:
            # the Structural built above is this schema's; only the validator is new
            CompiledSchema(schema, compile_rules=False, structural=ss)
        except Exception as exc:  # pragma: no cover - defensive
            errs.append(FieldError.invalid(path, "", f"error building validator: {exc}"))
    return errs


def _status_root_errors(schema: dict[str, Any], path: str) -> list[FieldError]:
    """With the status subresource on, the root is an object and sets only the fields of
    ``ALLOWED_AT_ROOT_WITH_STATUS`` (the first offending field is reported)."""
    for go_name, json_name in _GO_FIELDS:
        if not _is_set(schema, json_name):
            continue
        if go_name == "Type":
            if schema.get("type") != "object":
                return [
                    FieldError.invalid(
                        f"{path}.type",
                        schema.get("type"),
                        'only "object" is allowed as the type at the root '
                        "of the schema if the status subresource is enabled",
                    )
                ]
            continue
        if go_name not in ALLOWED_AT_ROOT_WITH_STATUS:
            return [
                FieldError.invalid(
                    path,
                    schema,
                    f"only [{' '.join(ALLOWED_AT_ROOT_WITH_STATUS)}] fields are allowed "
                    "at the root of the schema if the status subresource is enabled",
                )
            ]
    return []


def _is_set(schema: dict[str, Any], key: str) -> bool:
    """Is a JSONSchemaProps field non-zero (the Go struct's notion of set)?"""
    if key not in schema:
        return False
    v = schema[key]
    if v is None:
        return False
    if key in _NON_POINTER_BOOLS:
        return v is True
    if key in ("description", "type", "format", "title", "pattern", "id", "$schema"):
        return bool(v != "")
    return True


def _defaults_errors(root: st.Structural, path: str, opts: ValidationOptions) -> list[FieldError]:
    """Every ``default`` outside object metadata must be pruned already and valid
    against its own schema (OpenAPI, embedded resource, CEL rules), as the apiserver
    checks them."""
    errs: list[FieldError] = []
    _defaults_walk(root.as_root(), root.as_root(), path, False, opts, errs)
    return errs


def _defaults_walk(
    s: st.Structural,
    root: st.Structural,
    path: str,
    inside_meta: bool,
    opts: ValidationOptions,
    errs: list[FieldError],
) -> None:
    """Check every default under ``s`` (``root``: the resource it belongs to, for CEL)."""
    if s.embedded:
        inside_meta = False
        root = s
    if s.has_default and not inside_meta:
        value = s.default
        dpath = join_path(path, "default")
        if opts.require_pruned_defaults:
            pruned = copy_tree(value)
            out: list[str] = []
            st.prune(pruned, s, "", out)
            if not go_deep_equal(pruned, value):
                errs.append(FieldError.invalid(dpath, value, "must not have unknown fields"))
        verrs: list[FieldError] = []
        if s.embedded and isinstance(value, dict):
            st.validate_embedded(value, s, dpath, verrs)
        if not verrs:
            Validator(s.raw).validate(value, "", verrs)
            verrs = [_rebase(e, dpath) for e in verrs]
        if not verrs and s.has_rules:
            from .cel.rules import validate_default_rules

            verrs.extend(validate_default_rules(s, value, dpath, s is root))
        errs.extend(verrs)
    if s.items is not None:
        _defaults_walk(s.items, root, join_path(path, "items"), inside_meta, opts, errs)
    for k in sorted(s.properties):
        sub_meta = inside_meta or (s.embedded and k in st.META_FIELDS)
        _defaults_walk(
            s.properties[k], root, f"{join_path(path, 'properties')}[{k}]", sub_meta, opts, errs
        )


def _rebase(err: FieldError, base: str) -> FieldError:
    """``err`` (about a default's value) placed under the default's path ``base``."""
    field = base if err.field == ROOT_FIELD else f"{base}.{err.field}"
    return FieldError(err.type, field, err.detail, err.bad_value)
