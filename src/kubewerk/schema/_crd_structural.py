"""Is a CRD schema structural? ``ValidateStructural`` and its value-validation rules.

A structural schema (Kubernetes' term) gives every node a type, keeps ``properties``,
``items`` and ``additionalProperties`` out of the logical junctors (``allOf``, ``anyOf``,
``oneOf``, ``not``) and says nothing about root ``metadata`` but ``name`` and
``generateName``. These checks report where a schema is not, with the apiserver's
paths and messages; an invalid ``pattern`` is reported here too, as the apiserver does.
"""

from __future__ import annotations

from typing import Any, Final

from kubewerk.core.errors import FieldError

from . import _structural as st
from ._crd_internal import join_path
from ._regexp import compile_go_regexp, go_regexp_error


def is_non_structural(schema: dict[str, Any]) -> bool:
    """Whether ``schema`` (an ``openAPIV3Schema``) breaks a structural-schema rule."""
    errs: list[FieldError] = []
    validate_structural(st.Structural(schema), schema, "root", "", errs)
    return bool(errs)


_INT_OR_STRING_ANYOF: Final = [{"type": "integer"}, {"type": "string"}]
_FORBIDDEN_IN_JUNCTORS: Final = (
    ("type", "must be empty to be structural"),
    ("additionalProperties", "must be undefined to be structural"),
    ("default", "must be undefined to be structural"),
    ("title", "must be empty to be structural"),
    ("description", "must be empty to be structural"),
    ("nullable", "must be false to be structural"),
    ("x-kubernetes-preserve-unknown-fields", "must be false to be structural"),
    ("x-kubernetes-embedded-resource", "must be false to be structural"),
    ("x-kubernetes-int-or-string", "must be false to be structural"),
    ("x-kubernetes-list-map-keys", "must be empty to be structural"),
    ("x-kubernetes-list-type", "must be undefined to be structural"),
    ("x-kubernetes-map-type", "must be undefined to be structural"),
    ("x-kubernetes-validations", "must be empty to be structural"),
)


def validate_structural(
    s: st.Structural, raw: dict[str, Any], level: str, path: str, errs: list[FieldError]
) -> None:
    """``ValidateStructural``'s invariants (errors are sorted by the caller)."""
    if s.type == "array" and s.items is None:
        errs.append(FieldError.required(join_path(path, "items"), "must be specified"))
    if s.items is not None:
        validate_structural(s.items, s.items.raw, "item", join_path(path, "items"), errs)
    for k, v in s.properties.items():
        validate_structural(v, v.raw, "field", f"{join_path(path, 'properties')}[{k}]", errs)
    if s.additional_bool:
        if level == "root":
            errs.append(
                FieldError.forbidden(
                    join_path(path, "additionalProperties"), "must not be used at the root"
                )
            )
        if s.additional is not None:
            validate_structural(
                s.additional,
                s.additional.raw,
                "field",
                join_path(path, "additionalProperties"),
                errs,
            )
    if s.int_or_string and s.preserve_unknown:
        errs.append(
            FieldError.invalid(
                join_path(path, "x-kubernetes-preserve-unknown-fields"),
                True,
                "must be false if x-kubernetes-int-or-string is true",
            )
        )
    if s.int_or_string and s.embedded:
        errs.append(
            FieldError.invalid(
                join_path(path, "x-kubernetes-embedded-resource"),
                True,
                "must be false if x-kubernetes-int-or-string is true",
            )
        )
    skip_anyof = isinstance(raw.get("anyOf"), list) and raw["anyOf"] == _INT_OR_STRING_ANYOF
    all_of = raw.get("allOf")
    skip_first = (
        isinstance(all_of, list)
        and all_of
        and isinstance(all_of[0], dict)
        and all_of[0].get("anyOf") == _INT_OR_STRING_ANYOF
    )
    _validate_value_validation(raw, skip_anyof, bool(skip_first), level, path, errs, True)
    check_meta = level == "root" or s.embedded
    if s.embedded and s.type != "object":
        if not s.type:
            errs.append(
                FieldError.required(
                    join_path(path, "type"),
                    "must be object if x-kubernetes-embedded-resource is true",
                )
            )
        else:
            errs.append(
                FieldError.invalid(
                    join_path(path, "type"),
                    s.type,
                    "must be object if x-kubernetes-embedded-resource is true",
                )
            )
    elif not s.type and not s.int_or_string and not s.preserve_unknown:
        detail = {
            "root": "must not be empty at the root",
            "item": "must not be empty for specified array items",
            "field": "must not be empty for specified object fields",
        }[level]
        errs.append(FieldError.required(join_path(path, "type"), detail))
    if s.embedded and s.additional_bool:
        errs.append(
            FieldError.forbidden(
                join_path(path, "additionalProperties"),
                "must not be used if x-kubernetes-embedded-resource is set",
            )
        )
    if level == "root" and s.type and s.type != "object":
        errs.append(
            FieldError.invalid(join_path(path, "type"), s.type, "must be object at the root")
        )
    for meta_key in ("kind", "apiVersion"):
        sub = s.properties.get(meta_key)
        if sub is not None and check_meta and sub.type != "string":
            errs.append(
                FieldError.invalid(
                    f"{join_path(path, 'properties')}[{meta_key}].type", sub.type, "must be string"
                )
            )
    md = s.properties.get("metadata")
    if md is not None:
        mpath = f"{join_path(path, 'properties')}[metadata]"
        if check_meta and md.type != "object":
            errs.append(FieldError.invalid(join_path(mpath, "type"), md.type, "must be object"))
        if level == "root" and not _root_metadata_ok(md.raw):
            errs.append(
                FieldError.forbidden(
                    mpath,
                    "must not specify anything other than name and "
                    "generateName, but metadata is implicitly specified",
                )
            )
    if s.embedded and not s.preserve_unknown and not s.properties:
        errs.append(
            FieldError.required(
                join_path(path, "properties"),
                "must not be empty if x-kubernetes-embedded-resource "
                "is true without x-kubernetes-preserve-unknown-fields",
            )
        )


_VALUE_VALIDATION_KEYS: Final = frozenset(
    {
        "format",
        "maximum",
        "exclusiveMaximum",
        "minimum",
        "exclusiveMinimum",
        "maxLength",
        "minLength",
        "pattern",
        "maxItems",
        "minItems",
        "uniqueItems",
        "multipleOf",
        "enum",
        "maxProperties",
        "minProperties",
        "required",
        "allOf",
        "oneOf",
        "anyOf",
        "not",
    }
)


_METADATA_IGNORED: Final = frozenset(
    {"type", "default", "description", "title", "example", "externalDocs", "$schema", "id"}
)


def _root_metadata_ok(md: dict[str, Any]) -> bool:
    """Root ``metadata`` may only restrict ``name``/``generateName`` (and say it is an object)."""
    props = md.get("properties")
    if isinstance(props, dict) and props:
        names = set(props)
        if not (names <= {"name", "generateName"}):
            return False
    for k, v in md.items():
        if k in ("properties",) or k in _METADATA_IGNORED:
            continue
        if (
            k in _VALUE_VALIDATION_KEYS
            or k.startswith("x-kubernetes-")
            or k in ("items", "additionalProperties", "nullable")
        ):
            if k == "nullable" and v is False:
                continue
            return False
    return True


def _validate_value_validation(
    raw: dict[str, Any],
    skip_anyof: bool,
    skip_first_allof_anyof: bool,
    level: str,
    path: str,
    errs: list[FieldError],
    allow_xvalidations: bool,
) -> None:
    """``validateValueValidation``: each junctor's subschemas (a nested context) and
    the pattern; the int-or-string ``anyOf`` idiom is skipped."""
    if not skip_anyof:
        for i, sub in enumerate(raw.get("anyOf") or []):
            _validate_nested(sub, False, level, f"{join_path(path, 'anyOf')}[{i}]", errs, False)
    for i, sub in enumerate(raw.get("allOf") or []):
        _validate_nested(
            sub,
            skip_first_allof_anyof and i == 0,
            level,
            f"{join_path(path, 'allOf')}[{i}]",
            errs,
            allow_xvalidations,
        )
    for i, sub in enumerate(raw.get("oneOf") or []):
        _validate_nested(sub, False, level, f"{join_path(path, 'oneOf')}[{i}]", errs, False)
    _validate_nested(raw.get("not"), False, level, join_path(path, "not"), errs, False)
    pattern = raw.get("pattern")
    if isinstance(pattern, str) and pattern:
        try:
            compile_go_regexp(pattern)
        except Exception as exc:
            errs.append(
                FieldError.invalid(
                    join_path(path, "pattern"),
                    pattern,
                    "must be a valid regular expression, but "
                    f"isn't: {go_regexp_error(pattern, exc)}",
                )
            )


def _validate_nested(
    raw: Any,
    skip_anyof: bool,
    level: str,
    path: str,
    errs: list[FieldError],
    allow_xvalidations: bool,
) -> None:
    """``validateNestedValueValidation``: a junctor's subschema may only validate values,
    not declare structure or types."""
    if not isinstance(raw, dict):
        return
    _validate_value_validation(raw, skip_anyof, False, level, path, errs, allow_xvalidations)
    items = raw.get("items")
    if isinstance(items, dict):
        _validate_nested(items, False, level, join_path(path, "items"), errs, allow_xvalidations)
    props = raw.get("properties")
    if isinstance(props, dict):
        for k, v in props.items():
            _validate_nested(
                v, False, "field", f"{join_path(path, 'properties')}[{k}]", errs, allow_xvalidations
            )
    for key, detail in _FORBIDDEN_IN_JUNCTORS:
        if key not in raw:
            continue
        v = raw[key]
        if key in (
            "nullable",
            "x-kubernetes-preserve-unknown-fields",
            "x-kubernetes-embedded-resource",
            "x-kubernetes-int-or-string",
        ):
            if v is not True:
                continue
        elif key in ("type", "title", "description", "x-kubernetes-list-map-keys"):
            if not v:
                continue
        elif key == "x-kubernetes-validations":
            if not v or allow_xvalidations:
                continue
        elif key == "additionalProperties" and v is None:
            continue
        errs.append(FieldError.forbidden(join_path(path, key), detail))
    if isinstance(props, dict) and "metadata" in props:
        errs.append(
            FieldError.forbidden(
                f"{join_path(path, 'properties')}[metadata]",
                "must not be specified in a nested context",
            )
        )
