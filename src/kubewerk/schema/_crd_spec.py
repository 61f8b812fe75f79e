"""A CRD's spec and metadata checks: names, group, scope, versions, subresources,
printer columns, selectable fields, stored versions, API approval.

The checks of ``ValidateCustomResourceDefinition`` (and its update variant) outside
the schemas themselves, on the internal-version view (:class:`CrdSpec`); each
version's schema goes to :func:`validate_version_schema`, ``spec.conversion`` to
:func:`validate_conversion`.
"""

from __future__ import annotations

from typing import Any, Final
from urllib.parse import urlsplit

from kubewerk.core.errors import FieldError
from kubewerk.core.gofmt import GoText, go_json

from . import _structural as st
from ._crd_conversion import validate_conversion
from ._crd_internal import CrdSpec, ValidationOptions, as_dict, as_str, schema_has
from ._crd_schema import validate_version_schema

PRINTER_COLUMN_TYPES: Final = ("boolean", "date", "integer", "number", "string")


PRINTER_COLUMN_FORMATS: Final = (
    "byte",
    "date",
    "date-time",
    "double",
    "float",
    "int32",
    "int64",
    "password",
)


API_APPROVAL_ANNOTATION: Final = "api-approved.kubernetes.io"


def validate_meta(
    meta: dict[str, Any], spec: CrdSpec, old: dict[str, Any] | None
) -> list[FieldError]:
    """``metadata``: the name is ``<plural>.<group>`` (immutable on update); no namespace."""
    errs: list[FieldError] = []
    name = as_str(meta.get("name"))
    gen = as_str(meta.get("generateName"))
    required = f"{spec.names.get('plural', '')}.{spec.group}"

    def name_errors(n: str, prefix: bool) -> list[str]:
        candidate = n
        if prefix and len(n) > 1 and n.endswith("-"):
            candidate = n[:-1]
        out = st.dns1123_subdomain_errors(candidate)
        if n != required:
            out.append('must be spec.names.plural+"."+spec.group')
        return out

    if old is None:
        if gen:
            for msg in name_errors(gen, True):
                errs.append(FieldError.invalid("metadata.generateName", gen, msg))
        if not name:
            errs.append(FieldError.required("metadata.name", "name or generateName is required"))
        else:
            for msg in name_errors(name, False):
                errs.append(FieldError.invalid("metadata.name", name, msg))
    else:
        old_meta = as_dict(old.get("metadata"))
        if name != as_str(old_meta.get("name")):
            errs.append(FieldError.invalid("metadata.name", name, "field is immutable"))
    if meta.get("namespace"):
        errs.append(FieldError.forbidden("metadata.namespace", "not allowed on this type"))
    return errs


def validate_names(names: dict[str, Any], path: str) -> list[FieldError]:
    """The names at ``path`` (``spec.names`` or ``status.acceptedNames``): DNS labels,
    kind and listKind distinct."""
    errs: list[FieldError] = []
    for key in ("plural", "singular"):
        v = as_str(names.get(key))
        le = st.dns1035_label_errors(v)
        if v and le:
            errs.append(FieldError.invalid(f"{path}.{key}", v, ",".join(le)))
    for key in ("kind", "listKind"):
        v = as_str(names.get(key))
        le = st.dns1035_label_errors(v.lower())
        if v and le:
            errs.append(
                FieldError.invalid(
                    f"{path}.{key}",
                    v,
                    "may have mixed case, but should otherwise match: " + ",".join(le),
                )
            )
    for i, short in enumerate(names.get("shortNames") or []):
        le = st.dns1035_label_errors(as_str(short))
        if le:
            errs.append(FieldError.invalid(f"{path}.shortNames[{i}]", short, ",".join(le)))
    kind = as_str(names.get("kind"))
    if kind and kind == names.get("listKind"):
        errs.append(
            FieldError.invalid(f"{path}.listKind", kind, "kind and listKind may not be the same")
        )
    for i, cat in enumerate(names.get("categories") or []):
        le = st.dns1035_label_errors(as_str(cat))
        if le:
            errs.append(FieldError.invalid(f"{path}.categories[{i}]", cat, ",".join(le)))
    return errs


def validate_stored_versions(stored: list[Any], versions: list[dict[str, Any]]) -> list[FieldError]:
    """``status.storedVersions``: non-empty, holds the storage version, and every entry
    is still a version of the spec."""
    path = "status.storedVersions"
    if not stored:
        return [FieldError.invalid(path, [], "must have at least one stored version")]
    errs: list[FieldError] = []
    remaining = {v: i for i, v in enumerate(stored)}
    for v in versions:
        name = v.get("name")
        if v.get("storage") is True and name not in remaining:
            errs.append(FieldError.invalid(path, stored, f"must have the storage version {name}"))
        remaining.pop(name, None)
    for v, i in remaining.items():
        errs.append(
            FieldError.invalid(
                f"{path}[{i}]",
                v,
                f"missing from spec.versions; {v} was previously a storage version, and "
                "must remain in spec.versions until a storage migration ensures no data "
                f"remains persisted in {v} and removes {v} from status.storedVersions",
            )
        )
    return errs


def validate_api_approval(
    meta: dict[str, Any], spec: CrdSpec, old: dict[str, Any] | None
) -> list[FieldError]:
    """Groups under ``k8s.io`` / ``kubernetes.io`` need the API-approval annotation; on
    update only a change of its state is checked."""
    g = spec.group
    if not (
        g in ("k8s.io", "kubernetes.io") or g.endswith(".k8s.io") or g.endswith(".kubernetes.io")
    ):
        return []

    def state(m: Any) -> tuple[str, str]:
        ann = (m or {}).get("annotations") or {}
        if API_APPROVAL_ANNOTATION not in ann:
            return "missing", (
                f'protected groups must have approval annotation "{API_APPROVAL_ANNOTATION}", '
                "see https://github.com/kubernetes/enhancements/pull/1111"
            )
        value = as_str(ann[API_APPROVAL_ANNOTATION])
        if value.startswith("unapproved"):
            return "bypassed", ""
        try:
            parts = urlsplit(value)
            if parts.scheme and parts.netloc:
                return "approved", ""
        except ValueError:
            pass
        return "invalid", (
            "protected groups must have approval annotation "
            f'"{API_APPROVAL_ANNOTATION}" with either a URL or a reason starting with '
            '"unapproved", see https://github.com/kubernetes/enhancements/pull/1111'
        )

    new_state, reason = state(meta)
    if isinstance(old, dict) and state(old.get("metadata"))[0] == new_state:
        return []
    path = f"metadata.annotations[{API_APPROVAL_ANNOTATION}]"
    if new_state == "missing":
        return [FieldError.required(path, reason)]
    if new_state == "invalid":
        return [
            FieldError.invalid(
                path, (meta.get("annotations") or {}).get(API_APPROVAL_ANNOTATION), reason
            )
        ]
    return []


def validate_spec_update(spec: CrdSpec, old: CrdSpec, opts: ValidationOptions) -> list[FieldError]:
    """What may not change on update: group and plural; scope and kind once established."""
    errs: list[FieldError] = []
    if opts.immutable_names:
        if spec.scope != old.scope:
            errs.append(FieldError.invalid("spec.scope", spec.scope, "field is immutable"))
        if spec.names.get("kind") != old.names.get("kind"):
            errs.append(
                FieldError.invalid("spec.names.kind", spec.names.get("kind"), "field is immutable")
            )
    if spec.group != old.group:
        errs.append(FieldError.invalid("spec.group", spec.group, "field is immutable"))
    if spec.names.get("plural") != old.names.get("plural"):
        errs.append(
            FieldError.invalid("spec.names.plural", spec.names.get("plural"), "field is immutable")
        )
    return errs


def validate_spec(spec: CrdSpec, opts: ValidationOptions, path: str) -> list[FieldError]:
    """``spec`` at ``path``: group, scope, versions (each with its schema, subresources,
    columns, selectable fields), names, the shared parts and conversion."""
    errs: list[FieldError] = []
    if not spec.group:
        errs.append(FieldError.required(f"{path}.group"))
    else:
        ge = st.dns1123_subdomain_errors(spec.group)
        if ge:
            errs.append(FieldError.invalid(f"{path}.group", spec.group, ",".join(ge)))
        elif len(spec.group.split(".")) < 2:
            errs.append(
                FieldError.invalid(
                    f"{path}.group", spec.group, "should be a domain with at least one dot"
                )
            )
    if not spec.scope:
        errs.append(FieldError.required(f"{path}.scope"))
    elif spec.scope not in ("Cluster", "Namespaced"):
        errs.append(
            FieldError.not_supported(f"{path}.scope", spec.scope, ["Cluster", "Namespaced"])
        )

    require_structural = opts.require_structural or not spec.preserve_unknown
    if spec.validation is None or not isinstance(spec.validation.get("openAPIV3Schema"), dict):
        for i in range(len(spec.versions)):
            s = spec.v_schema[i]
            if not isinstance(s, dict) or not isinstance(s.get("openAPIV3Schema"), dict):
                errs.append(FieldError.required(f"{path}.versions[{i}].schema.openAPIV3Schema"))
    schemas = spec.schemas()
    if any(schema_has(s, lambda n: "default" in n) for s in schemas):
        require_structural = True
        if spec.preserve_unknown:
            errs.append(
                FieldError.invalid(
                    f"{path}.preserveUnknownFields",
                    True,
                    "must be false in order to use defaults in the schema",
                )
            )

    errs.extend(_validate_versions(spec, opts, path, require_structural))
    any_status = _has_status(spec.subresources) or any(_has_status(x) for x in spec.v_sub)
    for key in ("plural", "singular", "kind", "listKind"):
        if not spec.names.get(key):
            errs.append(FieldError.required(f"{path}.names.{key}"))
    errs.extend(validate_names(spec.names, f"{path}.names"))
    if spec.validation is not None:
        errs.extend(
            validate_version_schema(
                spec.validation, any_status, opts, f"{path}.validation", require_structural
            )
        )
    errs.extend(_validate_subresources(spec.subresources, f"{path}.subresources"))
    for i, col in enumerate(spec.columns):
        errs.extend(_validate_column(col, f"{path}.additionalPrinterColumns[{i}]"))
    if spec.selectable:
        if spec.validation is None:
            errs.append(
                FieldError.invalid(
                    f"{path}.selectableFields",
                    "",
                    "may only be set when validations.schema is included",
                )
            )
        else:
            errs.extend(
                _validate_selectable(
                    spec.selectable,
                    spec.validation.get("openAPIV3Schema"),
                    f"{path}.selectableFields",
                )
            )
    conv = spec.conversion
    if conv is not None and conv.get("strategy") != "None" and spec.preserve_unknown:
        errs.append(
            FieldError.invalid(
                f"{path}.conversion.strategy",
                conv.get("strategy"),
                "must be None if spec.preserveUnknownFields is true",
            )
        )
    errs.extend(validate_conversion(conv, f"{path}.conversion"))
    return errs


def _validate_versions(
    spec: CrdSpec, opts: ValidationOptions, path: str, require_structural: bool
) -> list[FieldError]:
    """Each version (name, and what :func:`_validate_version` checks), then: unique
    names, exactly one storage version."""
    errs: list[FieldError] = []
    storage = 0
    seen: set[str] = set()
    unique = True
    for i, v in enumerate(spec.versions):
        vpath = f"{path}.versions[{i}]"
        if v.get("storage") is True:
            storage += 1
        name = as_str(v.get("name"))
        if name in seen:
            unique = False
        seen.add(name)
        le = st.dns1035_label_errors(name)
        if le:
            errs.append(FieldError.invalid(f"{vpath}.name", name, ",".join(le)))
        sub = (
            spec.subresources
            if spec.v_sub[i] is None and spec.subresources is not None
            else spec.v_sub[i]
        )
        if not any(x is not None for x in spec.v_sub):
            sub = spec.subresources
        errs.extend(
            _validate_version(spec, i, v, vpath, _has_status(sub), opts, require_structural)
        )

    if not unique:
        errs.append(
            FieldError.invalid(
                f"{path}.versions", _versions_value(spec), "must contain unique version names"
            )
        )
    if storage != 1:
        errs.append(
            FieldError.invalid(
                f"{path}.versions",
                _versions_value(spec),
                "must have exactly one version marked as storage version",
            )
        )
    return errs


def _versions_value(spec: CrdSpec) -> GoText:
    """``spec.versions`` as the error shows it (``json.Marshal`` of the versions)."""
    return GoText(go_json(spec.raw.get("versions") or []))


def _has_status(sub: Any) -> bool:
    """Whether subresources ``sub`` turn the status subresource on."""
    return isinstance(sub, dict) and sub.get("status") is not None


def _validate_version(
    spec: CrdSpec,
    i: int,
    v: dict[str, Any],
    vpath: str,
    status: bool,
    opts: ValidationOptions,
    require_structural: bool,
) -> list[FieldError]:
    """One version at ``vpath``: deprecation warning, its own schema, subresources,
    columns and selectable fields (those not moved to the top level)."""
    errs: list[FieldError] = []
    dep = v.get("deprecated") is True
    warning = v.get("deprecationWarning")
    if warning is not None:
        if not dep:
            errs.append(
                FieldError.invalid(
                    f"{vpath}.deprecationWarning",
                    warning,
                    "can only be set for deprecated versions",
                )
            )
        else:
            w = as_str(warning)
            if len(w.encode()) > 256:
                errs.append(
                    FieldError.invalid(
                        f"{vpath}.deprecationWarning", w, "must be <= 256 characters long"
                    )
                )
            if not w:
                errs.append(
                    FieldError.invalid(
                        f"{vpath}.deprecationWarning", w, "must not be an empty string"
                    )
                )
            for idx, ch in enumerate(w):
                if not ch.isprintable():
                    errs.append(
                        FieldError.invalid(
                            f"{vpath}.deprecationWarning",
                            w,
                            "must only contain printable UTF-8 characters; non-printable "
                            f"character found at index {len(w[:idx].encode())}",
                        )
                    )
                    break
    if spec.v_schema[i] is not None:
        errs.extend(
            validate_version_schema(
                spec.v_schema[i], status, opts, f"{vpath}.schema", require_structural
            )
        )
    errs.extend(_validate_subresources(spec.v_sub[i], f"{vpath}.subresources"))
    for j, col in enumerate(spec.v_cols[i]):
        errs.extend(_validate_column(col, f"{vpath}.additionalPrinterColumns[{j}]"))
    if spec.v_sel[i]:
        s = spec.v_schema[i]
        if not isinstance(s, dict) or not isinstance(s.get("openAPIV3Schema"), dict):
            errs.append(
                FieldError.invalid(
                    f"{vpath}.selectableFields",
                    "",
                    "may only be set when `version.schema.openAPIV3Schema` is not included",
                )
            )
        else:
            errs.extend(
                _validate_selectable(
                    spec.v_sel[i], s["openAPIV3Schema"], f"{vpath}.selectableFields"
                )
            )
    return errs


def _validate_subresources(sub: Any, path: str) -> list[FieldError]:
    """The scale subresource's replica and selector paths."""
    errs: list[FieldError] = []
    if not isinstance(sub, dict) or not isinstance(sub.get("scale"), dict):
        return errs
    scale = sub["scale"]
    for key, prefix, what in (
        ("specReplicasPath", ".spec.", "should be a json path under .spec"),
        ("statusReplicasPath", ".status.", "should be a json path under .status"),
    ):
        value = as_str(scale.get(key))
        if not value:
            errs.append(FieldError.required(f"{path}.scale.{key}"))
            continue
        je = _simple_json_path(value, f"{path}.scale.{key}")
        if je:
            errs.extend(je)
        elif not value.startswith(prefix):
            errs.append(FieldError.invalid(f"{path}.scale.{key}", value, what))
    sel = scale.get("labelSelectorPath")
    if isinstance(sel, str) and sel:
        je = _simple_json_path(sel, f"{path}.scale.labelSelectorPath")
        if je:
            errs.extend(je)
        elif not sel.startswith(".spec.") and not sel.startswith(".status."):
            errs.append(
                FieldError.invalid(
                    f"{path}.scale.labelSelectorPath",
                    sel,
                    "should be a json path under either .spec or .status",
                )
            )
    return errs


def _simple_json_path(s: str, path: str) -> list[FieldError]:
    """A printer-column or scale path: non-empty and starting with a dot."""
    if not s:
        return [FieldError.invalid(path, s, "must not be empty")]
    if s[0] != ".":
        return [FieldError.invalid(path, s, "must be a simple json path starting with .")]
    return []


def _validate_column(col: Any, path: str) -> list[FieldError]:
    """One printer column: name, type, format, JSON path."""
    errs: list[FieldError] = []
    col = col if isinstance(col, dict) else {}
    if not col.get("name"):
        errs.append(FieldError.required(f"{path}.name"))
    t = as_str(col.get("type"))
    types = ",".join(PRINTER_COLUMN_TYPES)
    if not t:
        errs.append(FieldError.required(f"{path}.type", f"must be one of {types}"))
    elif t not in PRINTER_COLUMN_TYPES:
        errs.append(FieldError.invalid(f"{path}.type", t, f"must be one of {types}"))
    f = as_str(col.get("format"))
    if f and f not in PRINTER_COLUMN_FORMATS:
        errs.append(
            FieldError.invalid(
                f"{path}.format", f, f"must be one of {','.join(PRINTER_COLUMN_FORMATS)}"
            )
        )
    jp = as_str(col.get("jsonPath"))
    if not jp:
        errs.append(FieldError.required(f"{path}.JSONPath"))
    else:
        errs.extend(_simple_json_path(jp, f"{path}.JSONPath"))
    return errs


def _validate_selectable(fields: list[Any], schema: Any, path: str) -> list[FieldError]:
    """Selectable fields: at most 8, distinct, each a scalar field outside metadata."""
    errs: list[FieldError] = []
    seen: set[str] = set()
    root = st.Structural(schema) if isinstance(schema, dict) else None
    for i, f in enumerate(fields):
        ip = f"{path}[{i}].jsonPath"
        jp = as_str(f.get("jsonPath")) if isinstance(f, dict) else ""
        if not jp:
            errs.append(FieldError.required(ip))
            continue
        node, err = _resolve_field_path(root, jp)
        if err:
            errs.append(FieldError.invalid(ip, jp, f"is an invalid path: {err}"))
            continue
        norm = jp.lstrip(".")
        if norm.split(".")[0] == "metadata":
            errs.append(FieldError.invalid(ip, jp, "must not point to fields in metadata"))
        if node is None or node.type not in ("string", "boolean", "integer"):
            errs.append(
                FieldError.invalid(
                    ip,
                    jp,
                    "must point to a field of type string, boolean or integer. "
                    "Enum string fields and strings with formats are allowed.",
                )
            )
        if norm in seen:
            errs.append(FieldError.duplicate(ip, jp))
        seen.add(norm)
    if len(seen) > 8:
        errs.append(FieldError.too_many(path, len(seen), 8))
    return errs


def _resolve_field_path(root: st.Structural | None, jp: str) -> tuple[st.Structural | None, str]:
    """The schema node a simple JSON path reaches, or an error text."""
    if not jp.startswith("."):
        return None, "expected [ or . at index 0"  # approximation of the JSONPath parser error
    node = root
    for part in jp[1:].split("."):
        if node is None:
            return None, "does not refer to a valid field"
        if part in node.properties:
            node = node.properties[part]
        elif node.additional is not None:
            node = node.additional
        else:
            return None, "does not refer to a valid field"
    return node, ""
