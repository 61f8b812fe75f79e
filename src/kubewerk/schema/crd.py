"""CRD acceptance (``validate_crd``) and per-version schema compilation with a cache.

``validate_crd`` applies what ``ValidateCustomResourceDefinition`` (create) and
``ValidateCustomResourceDefinitionUpdate`` do in k8s.io/apiextensions-apiserver, on the
object after v1 defaulting and conversion to the internal version: when every version
carries the same schema (or subresources, printer columns), the apiserver moves it to
``spec.validation`` (``spec.subresources``, ``spec.additionalPrinterColumns``), and the
error paths say so (``spec.validation.openAPIV3Schema.properties[spec].type``).
"""

from __future__ import annotations

import copy
import threading
from collections import OrderedDict
from typing import Any, Final
from urllib.parse import urlsplit

from kubewerk.core.errors import FieldError
from kubewerk.core.gofmt import GoText, go_deep_equal, go_json

from . import _structural as st
from ._regexp import compile_go_regexp, go_regexp_error
from ._validator import ROOT_FIELD, Validator
from .compiled import CompiledSchema, SchemaError

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
OPENAPI_TYPES: Final = ("array", "boolean", "integer", "number", "object", "string")
VALIDATION_REASONS: Final = (
    "FieldValueDuplicate",
    "FieldValueForbidden",
    "FieldValueInvalid",
    "FieldValueRequired",
)
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
API_APPROVAL_ANNOTATION: Final = "api-approved.kubernetes.io"


# ------------------------------------------------------------------------- helpers
def _join(*parts: str) -> str:
    return ".".join(p for p in parts if p)


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


def _schema_has(s: Any, pred: Any) -> bool:
    if not isinstance(s, dict):
        return False
    if pred(s):
        return True
    items = s.get("items")
    if isinstance(items, dict) and _schema_has(items, pred):
        return True
    if isinstance(items, list) and any(_schema_has(i, pred) for i in items):
        return True
    for key in ("allOf", "anyOf", "oneOf"):
        if isinstance(s.get(key), list) and any(_schema_has(i, pred) for i in s[key]):
            return True
    if _schema_has(s.get("not"), pred):
        return True
    for key in ("properties", "patternProperties", "definitions"):
        if isinstance(s.get(key), dict) and any(_schema_has(v, pred) for v in s[key].values()):
            return True
    for key in ("additionalProperties", "additionalItems"):
        if _schema_has(s.get(key), pred):
            return True
    deps = s.get("dependencies")
    return isinstance(deps, dict) and any(_schema_has(v, pred) for v in deps.values())


# ------------------------------------------------------------------ internal view
class _Spec:
    """The CRD spec after v1 defaulting and conversion to the internal version."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.raw = spec
        self.group = _as_str(spec.get("group"))
        names = _as_dict(spec.get("names"))
        self.names = dict(names)
        self.scope = _as_str(spec.get("scope"))
        self.preserve_unknown = spec.get("preserveUnknownFields") is True
        self.conversion = _dict_or_none(spec.get("conversion"))
        versions = spec.get("versions")
        self.versions: list[dict[str, Any]] = (
            [v if isinstance(v, dict) else {} for v in versions]
            if isinstance(versions, list)
            else []
        )
        self.validation: dict[str, Any] | None = None
        self.subresources: dict[str, Any] | None = None
        self.columns: list[Any] = []
        self.selectable: list[Any] = []
        # per-version values (None once moved to the top level)
        self.v_schema: list[Any] = [v.get("schema") for v in self.versions]
        self.v_sub: list[Any] = [v.get("subresources") for v in self.versions]
        self.v_cols: list[Any] = [v.get("additionalPrinterColumns") or [] for v in self.versions]
        self.v_sel: list[Any] = [v.get("selectableFields") or [] for v in self.versions]
        if self.versions:
            if all(go_deep_equal(x, self.v_schema[0]) for x in self.v_schema):
                self.validation = self.v_schema[0]
                self.v_schema = [None] * len(self.versions)
            if all(go_deep_equal(x, self.v_sub[0]) for x in self.v_sub):
                self.subresources = self.v_sub[0]
                self.v_sub = [None] * len(self.versions)
            if all(go_deep_equal(x, self.v_cols[0]) for x in self.v_cols):
                self.columns = self.v_cols[0]
                self.v_cols = [[] for _ in self.versions]
            if all(go_deep_equal(x, self.v_sel[0]) for x in self.v_sel):
                self.selectable = self.v_sel[0]
                self.v_sel = [[] for _ in self.versions]

    def schemas(self) -> list[dict[str, Any]]:
        out = []
        for s in [self.validation, *self.v_schema]:
            if isinstance(s, dict) and isinstance(s.get("openAPIV3Schema"), dict):
                out.append(s["openAPIV3Schema"])
        return out


def _as_str(v: Any) -> str:
    return v if isinstance(v, str) else ""


def _as_dict(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _dict_or_none(v: Any) -> dict[str, Any] | None:
    return v if isinstance(v, dict) else None


def _as_list(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


_ATOMIC: Final = frozenset({str, int, float, bool, type(None)})


def _deepcopy(x: Any, memo: dict[int, Any] | None = None) -> Any:
    """``copy.deepcopy`` with the same result, faster on decoded JSON/YAML.

    Plain dicts and lists are copied here with deepcopy's memo (so shared and
    recursive parts stay shared, as YAML anchors make them); anything else goes
    to ``copy.deepcopy`` with that memo.
    """
    if memo is None:
        memo = {}
    t = type(x)
    if t is dict:
        hit = memo.get(id(x))
        if hit is not None:
            return hit
        out: dict[Any, Any] = {}
        memo[id(x)] = out
        for k, v in x.items():
            # deepcopy's order: the value, then the key
            value = v if type(v) in _ATOMIC else _deepcopy(v, memo)
            out[k if type(k) in _ATOMIC else copy.deepcopy(k, memo)] = value
        _keep(x, memo)
        return out
    if t is list:
        hit = memo.get(id(x))
        if hit is not None:
            return hit
        lst: list[Any] = []
        memo[id(x)] = lst
        for v in x:
            lst.append(v if type(v) in _ATOMIC else _deepcopy(v, memo))
        _keep(x, memo)
        return lst
    if t in _ATOMIC:
        return x
    return copy.deepcopy(x, memo)


def _keep(x: Any, memo: dict[int, Any]) -> None:
    """deepcopy's keep-alive list: the originals stay referenced while the memo lives."""
    try:
        memo[id(memo)].append(x)
    except KeyError:
        memo[id(memo)] = [x]


def _apply_v1_defaults(crd: dict[str, Any], old: dict[str, Any] | None) -> dict[str, Any]:
    crd = _deepcopy(crd)
    spec = (
        crd.setdefault("spec", {}) if isinstance(crd.get("spec"), dict) or "spec" not in crd else {}
    )
    if not isinstance(crd.get("spec"), dict):
        crd["spec"] = spec = {}
    names = spec.get("names")
    if not isinstance(names, dict):
        names = spec["names"] = {}
    kind = _as_str(names.get("kind"))
    if not names.get("singular"):
        names["singular"] = kind.lower()
    if not names.get("listKind") and kind:
        names["listKind"] = kind + "List"
    conv = spec.get("conversion")
    if conv is None:
        spec["conversion"] = {"strategy": "None"}
    elif isinstance(conv, dict):
        webhook = conv.get("webhook")
        if isinstance(webhook, dict):
            cc = webhook.get("clientConfig")
            if isinstance(cc, dict) and isinstance(cc.get("service"), dict):
                cc["service"].setdefault("port", 443)
    # PrepareForCreate / PrepareForUpdate: status comes from the server
    if old is None:
        status: dict[str, Any] = {}
        for v in spec.get("versions") or []:
            if isinstance(v, dict) and v.get("storage") is True:
                status["storedVersions"] = [_as_str(v.get("name"))]
                break
        crd["status"] = status
    else:
        old_status = _as_dict(old.get("status"))
        status = _deepcopy(old_status)
        stored = list(status.get("storedVersions") or [])
        for v in spec.get("versions") or []:
            if isinstance(v, dict) and v.get("storage") is True and v.get("name") not in stored:
                stored.append(_as_str(v.get("name")))
        status["storedVersions"] = stored
        crd["status"] = status
    return crd


# -------------------------------------------------------------------- validate_crd
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
    obj = _apply_v1_defaults(crd, old)
    spec = _Spec(obj["spec"])
    old_spec = _Spec(_apply_v1_defaults(old, old)["spec"]) if isinstance(old, dict) else None
    meta = _as_dict(obj.get("metadata"))
    opts = _Options(spec, old_spec, old)

    errs.extend(_validate_meta(meta, spec, old))
    errs.extend(_validate_spec(spec, opts, "spec"))
    if old_spec is not None:
        errs.extend(_validate_spec_update(spec, old_spec, opts))
    status = _as_dict(obj.get("status"))
    accepted = status.get("acceptedNames")
    if isinstance(accepted, dict):
        errs.extend(_validate_names(accepted, "status.acceptedNames"))
    errs.extend(_validate_stored_versions(status.get("storedVersions") or [], spec.versions))
    errs.extend(_validate_api_approval(meta, spec, old))
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


class _Options:
    def __init__(self, spec: _Spec, old_spec: _Spec | None, old: dict[str, Any] | None) -> None:
        self.require_structural = True
        self.require_valid_type = True
        self.require_pruned_defaults = True
        self.require_atomic_set = True
        self.require_map_list_keys = True
        self.immutable_names = False
        self.preexisting_rules: set[str] = set()
        if old_spec is not None:
            old_schemas = old_spec.schemas()
            self.require_structural = not any(_non_structural(s) for s in old_schemas)
            self.require_valid_type = not any(
                _schema_has(
                    s,
                    lambda n: (
                        isinstance(n.get("type"), str)
                        and n["type"]
                        and n["type"] not in OPENAPI_TYPES
                    ),
                )
                for s in old_schemas
            )
            self.require_atomic_set = not any(
                _schema_has(s, _has_non_atomic_set) for s in old_schemas
            )
            self.require_map_list_keys = not any(
                _schema_has(s, lambda n: bool(_map_list_keys_errors(n, ""))) for s in old_schemas
            )
            conds = (old or {}).get("status", {}).get("conditions") or []
            self.immutable_names = any(
                isinstance(c, dict) and c.get("type") == "Established" and c.get("status") == "True"
                for c in conds
            )


def _non_structural(schema: dict[str, Any]) -> bool:
    errs: list[FieldError] = []
    _validate_structural(st.Structural(schema), schema, "root", "", errs)
    return bool(errs)


def _has_non_atomic_set(n: dict[str, Any]) -> bool:
    if n.get("x-kubernetes-list-type") == "set" and isinstance(n.get("items"), dict):
        items = n["items"]
        if items.get("type") == "array":
            lt = items.get("x-kubernetes-list-type")
            return lt is not None and lt != "atomic"
        if items.get("type") == "object":
            return bool(items.get("x-kubernetes-map-type") != "atomic")
    return False


def _validate_meta(
    meta: dict[str, Any], spec: _Spec, old: dict[str, Any] | None
) -> list[FieldError]:
    errs: list[FieldError] = []
    name = _as_str(meta.get("name"))
    gen = _as_str(meta.get("generateName"))
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
        old_meta = _as_dict(old.get("metadata"))
        if name != _as_str(old_meta.get("name")):
            errs.append(FieldError.invalid("metadata.name", name, "field is immutable"))
    if meta.get("namespace"):
        errs.append(FieldError.forbidden("metadata.namespace", "not allowed on this type"))
    return errs


def _validate_names(names: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for key in ("plural", "singular"):
        v = _as_str(names.get(key))
        le = st.dns1035_label_errors(v)
        if v and le:
            errs.append(FieldError.invalid(f"{path}.{key}", v, ",".join(le)))
    for key in ("kind", "listKind"):
        v = _as_str(names.get(key))
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
        le = st.dns1035_label_errors(_as_str(short))
        if le:
            errs.append(FieldError.invalid(f"{path}.shortNames[{i}]", short, ",".join(le)))
    kind = _as_str(names.get("kind"))
    if kind and kind == names.get("listKind"):
        errs.append(
            FieldError.invalid(f"{path}.listKind", kind, "kind and listKind may not be the same")
        )
    for i, cat in enumerate(names.get("categories") or []):
        le = st.dns1035_label_errors(_as_str(cat))
        if le:
            errs.append(FieldError.invalid(f"{path}.categories[{i}]", cat, ",".join(le)))
    return errs


def _validate_stored_versions(
    stored: list[Any], versions: list[dict[str, Any]]
) -> list[FieldError]:
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
                f"missing from spec.versions; {v} was previously a storage version, and must remain in "
                f"spec.versions until a storage migration ensures no data remains persisted in {v} and "
                f"removes {v} from status.storedVersions",
            )
        )
    return errs


def _validate_api_approval(
    meta: dict[str, Any], spec: _Spec, old: dict[str, Any] | None
) -> list[FieldError]:
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
        value = _as_str(ann[API_APPROVAL_ANNOTATION])
        if value.startswith("unapproved"):
            return "bypassed", ""
        try:
            parts = urlsplit(value)
            if parts.scheme and parts.netloc:
                return "approved", ""
        except ValueError:
            pass
        return "invalid", (
            f'protected groups must have approval annotation "{API_APPROVAL_ANNOTATION}" with either a URL '
            'or a reason starting with "unapproved", see https://github.com/kubernetes/enhancements/pull/1111'
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


def _validate_spec_update(spec: _Spec, old: _Spec, opts: _Options) -> list[FieldError]:
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


def _validate_spec(spec: _Spec, opts: _Options, path: str) -> list[FieldError]:
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
    if any(_schema_has(s, lambda n: "default" in n) for s in schemas):
        require_structural = True
        if spec.preserve_unknown:
            errs.append(
                FieldError.invalid(
                    f"{path}.preserveUnknownFields",
                    True,
                    "must be false in order to use defaults in the schema",
                )
            )

    storage = 0
    seen: set[str] = set()
    unique = True
    any_status = _has_status(spec.subresources) or any(_has_status(s) for s in spec.v_sub)
    for i, v in enumerate(spec.versions):
        vpath = f"{path}.versions[{i}]"
        if v.get("storage") is True:
            storage += 1
        name = _as_str(v.get("name"))
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
    for key in ("plural", "singular", "kind", "listKind"):
        if not spec.names.get(key):
            errs.append(FieldError.required(f"{path}.names.{key}"))
    errs.extend(_validate_names(spec.names, f"{path}.names"))
    if spec.validation is not None:
        errs.extend(
            _validate_validation(
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
    errs.extend(_validate_conversion(conv, f"{path}.conversion"))
    return errs


def _versions_value(spec: _Spec) -> GoText:
    return GoText(go_json(spec.raw.get("versions") or []))


def _has_status(sub: Any) -> bool:
    return isinstance(sub, dict) and sub.get("status") is not None


def _validate_version(
    spec: _Spec,
    i: int,
    v: dict[str, Any],
    vpath: str,
    status: bool,
    opts: _Options,
    require_structural: bool,
) -> list[FieldError]:
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
            w = _as_str(warning)
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
                            f"must only contain printable UTF-8 characters; non-printable character found at index {len(w[:idx].encode())}",
                        )
                    )
                    break
    if spec.v_schema[i] is not None:
        errs.extend(
            _validate_validation(
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
    errs: list[FieldError] = []
    if not isinstance(sub, dict) or not isinstance(sub.get("scale"), dict):
        return errs
    scale = sub["scale"]
    for key, prefix, what in (
        ("specReplicasPath", ".spec.", "should be a json path under .spec"),
        ("statusReplicasPath", ".status.", "should be a json path under .status"),
    ):
        value = _as_str(scale.get(key))
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
    if not s:
        return [FieldError.invalid(path, s, "must not be empty")]
    if s[0] != ".":
        return [FieldError.invalid(path, s, "must be a simple json path starting with .")]
    return []


def _validate_column(col: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    col = col if isinstance(col, dict) else {}
    if not col.get("name"):
        errs.append(FieldError.required(f"{path}.name"))
    t = _as_str(col.get("type"))
    types = ",".join(PRINTER_COLUMN_TYPES)
    if not t:
        errs.append(FieldError.required(f"{path}.type", f"must be one of {types}"))
    elif t not in PRINTER_COLUMN_TYPES:
        errs.append(FieldError.invalid(f"{path}.type", t, f"must be one of {types}"))
    f = _as_str(col.get("format"))
    if f and f not in PRINTER_COLUMN_FORMATS:
        errs.append(
            FieldError.invalid(
                f"{path}.format", f, f"must be one of {','.join(PRINTER_COLUMN_FORMATS)}"
            )
        )
    jp = _as_str(col.get("jsonPath"))
    if not jp:
        errs.append(FieldError.required(f"{path}.JSONPath"))
    else:
        errs.extend(_simple_json_path(jp, f"{path}.JSONPath"))
    return errs


def _validate_selectable(fields: list[Any], schema: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[str] = set()
    root = st.Structural(schema) if isinstance(schema, dict) else None
    for i, f in enumerate(fields):
        ip = f"{path}[{i}].jsonPath"
        jp = _as_str(f.get("jsonPath")) if isinstance(f, dict) else ""
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
                    "must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed.",
                )
            )
        if norm in seen:
            errs.append(FieldError.duplicate(ip, jp))
        seen.add(norm)
    if len(seen) > 8:
        errs.append(FieldError.too_many(path, len(seen), 8))
    return errs


def _resolve_field_path(root: st.Structural | None, jp: str) -> tuple[st.Structural | None, str]:
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


def _validate_conversion(conv: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if not isinstance(conv, dict):
        return errs
    strategy = _as_str(conv.get("strategy"))
    if not strategy:
        errs.append(FieldError.required(f"{path}.strategy"))
    elif strategy not in ("None", "Webhook"):
        errs.append(FieldError.not_supported(f"{path}.strategy", strategy, ["None", "Webhook"]))
    webhook = _dict_or_none(conv.get("webhook"))
    cc = (
        webhook.get("clientConfig")
        if webhook and isinstance(webhook.get("clientConfig"), dict)
        else None
    )
    review = (webhook or {}).get("conversionReviewVersions") or []
    if strategy == "Webhook":
        if cc is None:
            errs.append(
                FieldError.required(
                    f"{path}.webhookClientConfig", "required when strategy is set to Webhook"
                )
            )
        else:
            ccp = f"{path}.webhookClientConfig"
            has_url = cc.get("url") is not None
            has_svc = cc.get("service") is not None
            if has_url == has_svc:
                errs.append(FieldError.required(ccp, "exactly one of url or service is required"))
            elif has_url:
                errs.extend(_validate_webhook_url(f"{ccp}.url", _as_str(cc.get("url"))))
            else:
                svc = cc["service"] if isinstance(cc["service"], dict) else {}
                errs.extend(_validate_webhook_service(f"{ccp}.service", svc))
        rp = f"{path}.conversionReviewVersions"
        if not review:
            errs.append(FieldError.required(rp))
        else:
            seen: set[str] = set()
            accepted = False
            for i, v in enumerate(review):
                if v in seen:
                    errs.append(FieldError.invalid(f"{rp}[{i}]", v, "duplicate version"))
                    continue
                seen.add(v)
                for msg in st.dns1035_label_errors(_as_str(v)):
                    errs.append(FieldError.invalid(f"{rp}[{i}]", v, msg))
                if v in ("v1", "v1beta1"):
                    accepted = True
            if not accepted:
                errs.append(
                    FieldError.invalid(rp, review, "must include at least one of v1, v1beta1")
                )
    else:
        if cc is not None:
            errs.append(
                FieldError.forbidden(
                    f"{path}.webhookClientConfig",
                    "should not be set when strategy is not set to Webhook",
                )
            )
        if review:
            errs.append(
                FieldError.forbidden(
                    f"{path}.conversionReviewVersions",
                    "should not be set when strategy is not set to Webhook",
                )
            )
    return errs


def _validate_webhook_url(path: str, url: str) -> list[FieldError]:
    try:
        u = urlsplit(url)
    except ValueError as exc:
        return [FieldError.invalid(path, url, f"url must be a valid URL: {exc}")]
    errs: list[FieldError] = []
    if u.scheme != "https":
        errs.append(FieldError.invalid(path, u.scheme, "'https' is the only allowed URL scheme"))
    host = u.netloc.rpartition("@")[2]
    if not host:
        errs.append(FieldError.invalid(path, host, "host must be specified"))
    if "@" in u.netloc:
        errs.append(
            FieldError.invalid(
                path, u.netloc.rpartition("@")[0], "user information is not permitted in the URL"
            )
        )
    if u.fragment:
        errs.append(FieldError.invalid(path, u.fragment, "fragments are not permitted in the URL"))
    if u.query:
        errs.append(
            FieldError.invalid(path, u.query, "query parameters are not permitted in the URL")
        )
    return errs


def _validate_webhook_service(path: str, svc: dict[str, Any]) -> list[FieldError]:
    errs: list[FieldError] = []
    if not svc.get("name"):
        errs.append(FieldError.required(f"{path}.name", "service name is required"))
    if not svc.get("namespace"):
        errs.append(FieldError.required(f"{path}.namespace", "service namespace is required"))
    port = svc.get("port", 443)
    if not isinstance(port, int) or not 1 <= port <= 65535:
        errs.append(
            FieldError.invalid(
                f"{path}.port", port, "port is not valid: must be between 1 and 65535, inclusive"
            )
        )
    url_path = svc.get("path")
    if not isinstance(url_path, str) or url_path in ("", "/"):
        return errs
    pp = f"{path}.path"
    if url_path == "//":
        errs.append(FieldError.invalid(pp, url_path, "segment[0] may not be empty"))
        return errs
    if not url_path.startswith("/"):
        errs.append(FieldError.invalid(pp, url_path, "must start with a '/'"))
        return errs
    check = url_path[1:]
    if check.endswith("/"):
        check = check[:-1]
    for i, step in enumerate(check.split("/")):
        if not step:
            errs.append(FieldError.invalid(pp, url_path, f"segment[{i}] may not be empty"))
            continue
        for failure in st.dns1123_subdomain_errors(step):
            errs.append(FieldError.invalid(pp, url_path, f"segment[{i}]: {failure}"))
    return errs


# ------------------------------------------------------------- schema validation
def _validate_validation(
    validation: Any, status_enabled: bool, opts: _Options, path: str, require_structural: bool
) -> list[FieldError]:
    errs: list[FieldError] = []
    if not isinstance(validation, dict):
        return errs
    schema = validation.get("openAPIV3Schema")
    if not isinstance(schema, dict):
        return errs
    sp = f"{path}.openAPIV3Schema"
    if status_enabled:
        for go_name, json_name in _GO_FIELDS:
            if not _is_set(schema, json_name):
                continue
            if go_name == "Type":
                if schema.get("type") != "object":
                    errs.append(
                        FieldError.invalid(
                            f"{sp}.type",
                            schema.get("type"),
                            'only "object" is allowed as the type at the root of the schema if the status subresource is enabled',
                        )
                    )
                    break
                continue
            if go_name not in ALLOWED_AT_ROOT_WITH_STATUS:
                errs.append(
                    FieldError.invalid(
                        sp,
                        schema,
                        f"only [{' '.join(ALLOWED_AT_ROOT_WITH_STATUS)}] fields are allowed at the root of the schema "
                        "if the status subresource is enabled",
                    )
                )
                break
    if schema.get("nullable") is True:
        errs.append(FieldError.forbidden(f"{sp}.nullable", "nullable cannot be true at the root"))

    structural_ok = False
    ss = st.Structural(schema)
    if require_structural:
        serrs: list[FieldError] = []
        _validate_structural(ss, schema, "root", sp, serrs)
        serrs.sort(key=lambda e: e.message())
        if serrs:
            errs.extend(serrs)
        else:
            derrs = _validate_defaults(ss, sp, opts)
            if derrs:
                errs.extend(derrs)
            else:
                structural_ok = True
    schema_errs, cel_errs = _validate_openapi(
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


class _SchemaContext:
    """specStandardValidatorV3's state while walking the schema."""

    __slots__ = ("allow_defaults", "inside_meta", "old_self_forbidden", "reason")

    def __init__(self) -> None:
        self.allow_defaults = True
        self.reason = ""
        self.inside_meta = False
        self.old_self_forbidden: str | None = None

    def clone(self) -> _SchemaContext:
        c = _SchemaContext()
        c.allow_defaults, c.reason, c.inside_meta, c.old_self_forbidden = (
            self.allow_defaults,
            self.reason,
            self.inside_meta,
            self.old_self_forbidden,
        )
        return c

    def forbid_defaults(self, reason: str) -> _SchemaContext:
        c = self.clone()
        c.allow_defaults, c.reason = False, reason
        return c

    def within_meta(self) -> _SchemaContext:
        c = self.clone()
        c.inside_meta = True
        return c

    def forbid_old_self(self, path: str) -> _SchemaContext:
        if self.old_self_forbidden is not None:
            return self
        c = self.clone()
        c.old_self_forbidden = path
        return c


def _standard_checks(schema: dict[str, Any], path: str, ctx: _SchemaContext, opts: _Options) -> list[FieldError]:
    errs: list[FieldError] = []
    t = schema.get("type")
    if opts.require_valid_type and isinstance(t, str) and t and t not in OPENAPI_TYPES:
        errs.append(FieldError.not_supported(f"{path}.type", t, list(OPENAPI_TYPES)))
    if "default" in schema and not ctx.allow_defaults:
        detail = "must not be set"
        if ctx.reason:
            detail += " " + ctx.reason
        errs.append(FieldError.forbidden(f"{path}.default", detail))
    if schema.get("id"):
        errs.append(FieldError.forbidden(f"{path}.id", "id is not supported"))
    if schema.get("additionalItems") is not None:
        errs.append(
            FieldError.forbidden(f"{path}.additionalItems", "additionalItems is not supported")
        )
    if schema.get("patternProperties"):
        errs.append(
            FieldError.forbidden(f"{path}.patternProperties", "patternProperties is not supported")
        )
    if schema.get("definitions"):
        errs.append(FieldError.forbidden(f"{path}.definitions", "definitions is not supported"))
    if schema.get("dependencies") is not None:
        errs.append(FieldError.forbidden(f"{path}.dependencies", "dependencies is not supported"))
    if schema.get("$ref") is not None:
        errs.append(FieldError.forbidden(f"{path}.$ref", "$ref is not supported"))
    if t == "null":
        errs.append(
            FieldError.forbidden(
                f"{path}.type", "type cannot be set to null, use nullable as an alternative"
            )
        )
    if isinstance(schema.get("items"), list) and schema["items"]:
        errs.append(
            FieldError.forbidden(f"{path}.items", "items must be a schema object and not an array")
        )
    if ctx.inside_meta and schema.get("x-kubernetes-embedded-resource") is True:
        errs.append(
            FieldError.forbidden(
                f"{path}.x-kubernetes-embedded-resource", "must not be used inside of resource meta"
            )
        )
    return errs


def _validate_openapi(
    schema: dict[str, Any], path: str, opts: _Options, node: st.Structural | None, cel_ok: bool
) -> tuple[list[FieldError], list[FieldError]]:
    """``ValidateCustomResourceDefinitionOpenAPISchema`` of a version's root schema:
    (schema errors, CEL errors), each in the apiserver's order.

    ``node``: the structural view of ``schema`` when it is structural (CEL rules and
    ``fieldPath`` are only checked against one); ``cel_ok``: compile the CEL rules.
    """
    walk = _OpenAPIWalk(opts)
    walk.visit(schema, path, _SchemaContext(), True, node, cel_ok)
    return walk.schema_errors, walk.cel_errors


class _OpenAPIWalk:
    """One walk over a schema: each node's own checks, its children, then its list/map
    types and its CEL rules. Schema errors and CEL errors are kept apart (the apiserver
    reports every schema error first)."""

    __slots__ = ("cel_errors", "opts", "schema_errors")

    def __init__(self, opts: _Options) -> None:
        self.opts = opts
        self.schema_errors: list[FieldError] = []
        self.cel_errors: list[FieldError] = []

    def visit(
        self,
        schema: Any,
        path: str,
        ctx: _SchemaContext,
        is_root: bool,
        node: st.Structural | None,
        cel_ok: bool,
    ) -> None:
        if not isinstance(schema, dict):
            return
        errs = self.schema_errors
        start = len(errs)
        errs.extend(_standard_checks(schema, path, ctx, self.opts))
        if schema.get("uniqueItems") is True:
            errs.append(
                FieldError.forbidden(
                    f"{path}.uniqueItems",
                    "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
                )
            )
        addl = schema.get("additionalProperties")
        if _as_dict(schema.get("properties")) and (addl is False or isinstance(addl, dict)):
            errs.append(
                FieldError.forbidden(
                    f"{path}.additionalProperties",
                    "additionalProperties and properties are mutual exclusive",
                )
            )
        self._visit_children(schema, path, ctx, is_root, node, cel_ok)
        if schema.get("x-kubernetes-preserve-unknown-fields") is False:
            errs.append(
                FieldError.invalid(
                    f"{path}.x-kubernetes-preserve-unknown-fields", False, "must be true or undefined"
                )
            )
        t = _as_str(schema.get("type"))
        errs.extend(_map_type_errors(schema, path, t))
        errs.extend(_list_type_errors(schema, path, t, self.opts))
        rules = schema.get("x-kubernetes-validations")
        if isinstance(rules, list) and rules:
            rp = f"{path}.x-kubernetes-validations"
            errs.extend(_rule_errors(rules, rp, node))
            # rules compile only where this subtree has no schema error
            if len(errs) == start and cel_ok and node is not None:
                from .cel.rules import check_node_rules

                self.cel_errors.extend(
                    check_node_rules(
                        node, rules, rp, ctx.old_self_forbidden, self.opts.preexisting_rules
                    )
                )

    def _visit_children(
        self,
        schema: dict[str, Any],
        path: str,
        ctx: _SchemaContext,
        is_root: bool,
        node: st.Structural | None,
        cel_ok: bool,
    ) -> None:
        """additionalProperties, properties, not, allOf/oneOf/anyOf, definitions, items,
        dependencies, in that order; CEL rules are only checked along the structural
        children (properties, additionalProperties, items)."""
        addl = schema.get("additionalProperties")
        if isinstance(addl, dict):
            sub = (
                ctx.forbid_defaults("inside additionalProperties applying to object metadata")
                if ctx.inside_meta
                else ctx
            )
            self.visit(
                addl,
                f"{path}.additionalProperties",
                sub,
                False,
                node.additional if node is not None else None,
                cel_ok,
            )
        props = _as_dict(schema.get("properties"))
        for name in sorted(props):
            sub = ctx
            if schema.get("x-kubernetes-map-type") == "atomic":
                sub = sub.forbid_old_self(path)
            if (
                is_root or schema.get("x-kubernetes-embedded-resource") is True
            ) and name in st.META_FIELDS:
                sub = sub.within_meta()
                if is_root:
                    sub = sub.forbid_defaults(f"in top-level {name}")
            self.visit(
                props[name],
                f"{path}.properties[{name}]",
                sub,
                False,
                node.properties.get(name) if node is not None else None,
                cel_ok,
            )
        self.visit(schema.get("not"), f"{path}.not", ctx, False, None, False)
        for key in ("allOf", "oneOf", "anyOf"):
            subs = schema.get(key)
            if isinstance(subs, list):
                for i, s in enumerate(subs):
                    self.visit(s, f"{path}.{key}[{i}]", ctx, False, None, False)
        defs = schema.get("definitions")
        if isinstance(defs, dict):
            for k in sorted(defs):
                self.visit(defs[k], f"{path}.definitions[{k}]", ctx, False, None, False)
        items = schema.get("items")
        if items is not None:
            sub = ctx
            if schema.get("x-kubernetes-list-type") != "map":
                sub = sub.forbid_old_self(path)
            if isinstance(items, dict):
                self.visit(
                    items,
                    f"{path}.items",
                    sub,
                    False,
                    node.items if node is not None else None,
                    cel_ok,
                )
            elif isinstance(items, list):
                for i, s in enumerate(items):
                    self.visit(s, f"{path}.items[{i}]", sub, False, None, False)
        deps = schema.get("dependencies")
        if isinstance(deps, dict):
            for k in sorted(deps):
                if isinstance(deps[k], dict):
                    self.visit(deps[k], f"{path}.dependencies[{k}]", ctx, False, None, False)


def _map_type_errors(schema: dict[str, Any], path: str, t: str) -> list[FieldError]:
    """``x-kubernetes-map-type``: only on objects, only ``atomic`` or ``granular``."""
    mt = schema.get("x-kubernetes-map-type")
    if mt is None:
        return []
    errs: list[FieldError] = []
    if t != "object":
        detail = "must be object if x-kubernetes-map-type is specified"
        if not t:
            errs.append(FieldError.required(f"{path}.type", detail))
        else:
            errs.append(FieldError.invalid(f"{path}.type", t, detail))
    if mt not in ("atomic", "granular"):
        errs.append(
            FieldError.not_supported(f"{path}.x-kubernetes-map-type", mt, ["atomic", "granular"])
        )
    return errs


def _list_type_errors(
    schema: dict[str, Any], path: str, t: str, opts: _Options
) -> list[FieldError]:
    """``x-kubernetes-list-type`` and ``x-kubernetes-list-map-keys``: only on arrays; set
    items atomic; a map list has keys, one object item schema and scalar key fields."""
    errs: list[FieldError] = []
    items = schema.get("items")
    lt = schema.get("x-kubernetes-list-type")
    if lt is not None and t != "array":
        detail = "must be array if x-kubernetes-list-type is specified"
        if not t:
            errs.append(FieldError.required(f"{path}.type", detail))
        else:
            errs.append(FieldError.invalid(f"{path}.type", t, detail))
    elif opts.require_atomic_set and lt == "set" and isinstance(items, dict):
        errs.extend(_set_item_errors(items, path))
    if lt is not None and lt not in ("atomic", "set", "map"):
        errs.append(
            FieldError.not_supported(f"{path}.x-kubernetes-list-type", lt, ["atomic", "set", "map"])
        )
    keys = schema.get("x-kubernetes-list-map-keys") or []
    if keys:
        detail = "must be map if x-kubernetes-list-map-keys is non-empty"
        if lt is None:
            errs.append(FieldError.required(f"{path}.x-kubernetes-list-type", detail))
        elif lt != "map":
            errs.append(FieldError.invalid(f"{path}.x-kubernetes-list-type", lt, detail))
    if lt == "map":
        errs.extend(_map_list_errors(items, keys, path))
    if opts.require_map_list_keys:
        errs.extend(_map_list_keys_errors(schema, path))
    return errs


def _set_item_errors(items: dict[str, Any], path: str) -> list[FieldError]:
    """The items of a ``set`` list must be atomic (scalars, atomic lists and maps)."""
    detail = "must be atomic as item of a list with x-kubernetes-list-type=set"
    if items.get("type") == "array":
        ilt = items.get("x-kubernetes-list-type")
        if ilt is not None and ilt != "atomic":
            return [FieldError.invalid(f"{path}.items.x-kubernetes-list-type", ilt, detail)]
    elif items.get("type") == "object" and items.get("x-kubernetes-map-type") != "atomic":
        return [
            FieldError.invalid(
                f"{path}.items.x-kubernetes-map-type", items.get("x-kubernetes-list-type"), detail
            )
        ]
    return []


def _map_list_errors(items: Any, keys: list[Any], path: str) -> list[FieldError]:
    """A ``map`` list: keys given, one object item schema, each key a scalar item property."""
    errs: list[FieldError] = []
    if not keys:
        errs.append(
            FieldError.required(
                f"{path}.x-kubernetes-list-map-keys",
                "must not be empty if x-kubernetes-list-type is map",
            )
        )
    if items is None:
        errs.append(
            FieldError.required(
                f"{path}.items", "must have a schema if x-kubernetes-list-type is map"
            )
        )
    elif not isinstance(items, dict):
        errs.append(
            FieldError.invalid(
                f"{path}.items",
                items,
                "must only have a single schema if x-kubernetes-list-type is map",
            )
        )
    elif items.get("type") != "object":
        errs.append(
            FieldError.invalid(
                f"{path}.items.type",
                _as_str(items.get("type")),
                "must be object if parent array's x-kubernetes-list-type is map",
            )
        )
    else:
        iprops = _as_dict(items.get("properties"))
        seen: set[str] = set()
        for k in keys:
            if k in iprops:
                if isinstance(iprops[k], dict) and iprops[k].get("type") in ("array", "object"):
                    errs.append(
                        FieldError.invalid(
                            f"{path}.items.properties[{k}].type",
                            "object",
                            "must be a scalar type if parent array's x-kubernetes-list-type is map",
                        )
                    )
            else:
                errs.append(
                    FieldError.invalid(
                        f"{path}.x-kubernetes-list-map-keys",
                        keys,
                        "entries must all be names of item properties",
                    )
                )
            if k in seen:
                errs.append(
                    FieldError.invalid(
                        f"{path}.x-kubernetes-list-map-keys",
                        keys,
                        "must not contain duplicate entries",
                    )
                )
            seen.add(k)
    return errs


def _rule_errors(rules: list[Any], path: str, node: st.Structural | None) -> list[FieldError]:
    """The fields of each ``x-kubernetes-validations`` rule (not its CEL: see
    ``check_node_rules``): rule and message text, reason, fieldPath."""
    errs: list[FieldError] = []
    for i, rule in enumerate(rules):
        rule = rule if isinstance(rule, dict) else {}
        text = _as_str(rule.get("rule"))
        msg = _as_str(rule.get("message"))
        msg_expr = _as_str(rule.get("messageExpression"))
        if not text.strip():
            errs.append(FieldError.required(f"{path}[{i}].rule", "rule is not specified"))
        elif msg and not msg.strip():
            errs.append(
                FieldError.invalid(f"{path}[{i}].message", msg, "must be non-empty if specified")
            )
        elif "\n" in msg.strip() or "\r" in msg.strip():
            errs.append(
                FieldError.invalid(f"{path}[{i}].message", msg, "must not contain line breaks")
            )
        elif ("\n" in text.strip() or "\r" in text.strip()) and not msg.strip():
            errs.append(
                FieldError.required(
                    f"{path}[{i}].message",
                    "message must be specified if rule contains line breaks",
                )
            )
        if msg_expr and not msg_expr.strip():
            errs.append(
                FieldError.required(
                    f"{path}[{i}].messageExpression",
                    "messageExpression must be non-empty if specified",
                )
            )
        reason = rule.get("reason")
        if reason is not None and reason not in VALIDATION_REASONS:
            errs.append(
                FieldError.not_supported(f"{path}[{i}].reason", reason, list(VALIDATION_REASONS))
            )
        fp = _as_str(rule.get("fieldPath"))
        if fp and not fp.strip():
            errs.append(
                FieldError.invalid(f"{path}[{i}].fieldPath", fp, "must be non-empty if specified")
            )
        if "\n" in fp or "\r" in fp:
            errs.append(
                FieldError.invalid(f"{path}[{i}].fieldPath", fp, "must not contain line breaks")
            )
        if fp and node is not None:
            from .cel.paths import valid_field_path

            if valid_field_path(fp, node) is not None:
                errs.append(
                    FieldError.invalid(f"{path}[{i}].fieldPath", fp, "must be a valid path")
                )
    return errs


def _map_list_keys_errors(schema: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    items = schema.get("items")
    lt = schema.get("x-kubernetes-list-type")
    if not isinstance(items, dict) or lt not in ("set", "map"):
        return errs
    if items.get("nullable") is True:
        errs.append(
            FieldError.forbidden(
                f"{path}.items.nullable", f"cannot be nullable when x-kubernetes-list-type is {lt}"
            )
        )
    if lt == "map":
        required = set(items.get("required") or [])
        iprops = _as_dict(items.get("properties"))
        for k in schema.get("x-kubernetes-list-map-keys") or []:
            prop = iprops.get(k)
            if not isinstance(prop, dict):
                continue
            if k not in required and "default" not in prop:
                errs.append(
                    FieldError.required(
                        f"{path}.items.properties[{k}].default",
                        "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
                    )
                )
            if prop.get("nullable") is True:
                errs.append(
                    FieldError.forbidden(
                        f"{path}.items.properties[{k}].nullable",
                        "this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
                    )
                )
    return errs


# ------------------------------------------------------------ structural rules
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


def _validate_structural(
    s: st.Structural, raw: dict[str, Any], level: str, path: str, errs: list[FieldError]
) -> None:
    """``ValidateStructural``'s invariants (errors are sorted by the caller)."""
    if s.type == "array" and s.items is None:
        errs.append(FieldError.required(_join(path, "items"), "must be specified"))
    if s.items is not None:
        _validate_structural(s.items, s.items.raw, "item", _join(path, "items"), errs)
    for k, v in s.properties.items():
        _validate_structural(v, v.raw, "field", f"{_join(path, 'properties')}[{k}]", errs)
    if s.additional_bool:
        if level == "root":
            errs.append(
                FieldError.forbidden(
                    _join(path, "additionalProperties"), "must not be used at the root"
                )
            )
        if s.additional is not None:
            _validate_structural(
                s.additional, s.additional.raw, "field", _join(path, "additionalProperties"), errs
            )
    if s.int_or_string and s.preserve_unknown:
        errs.append(
            FieldError.invalid(
                _join(path, "x-kubernetes-preserve-unknown-fields"),
                True,
                "must be false if x-kubernetes-int-or-string is true",
            )
        )
    if s.int_or_string and s.embedded:
        errs.append(
            FieldError.invalid(
                _join(path, "x-kubernetes-embedded-resource"),
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
                    _join(path, "type"), "must be object if x-kubernetes-embedded-resource is true"
                )
            )
        else:
            errs.append(
                FieldError.invalid(
                    _join(path, "type"),
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
        errs.append(FieldError.required(_join(path, "type"), detail))
    if s.embedded and s.additional_bool:
        errs.append(
            FieldError.forbidden(
                _join(path, "additionalProperties"),
                "must not be used if x-kubernetes-embedded-resource is set",
            )
        )
    if level == "root" and s.type and s.type != "object":
        errs.append(FieldError.invalid(_join(path, "type"), s.type, "must be object at the root"))
    for meta_key in ("kind", "apiVersion"):
        sub = s.properties.get(meta_key)
        if sub is not None and check_meta and sub.type != "string":
            errs.append(
                FieldError.invalid(
                    f"{_join(path, 'properties')}[{meta_key}].type", sub.type, "must be string"
                )
            )
    md = s.properties.get("metadata")
    if md is not None:
        mpath = f"{_join(path, 'properties')}[metadata]"
        if check_meta and md.type != "object":
            errs.append(FieldError.invalid(_join(mpath, "type"), md.type, "must be object"))
        if level == "root" and not _root_metadata_ok(md.raw):
            errs.append(
                FieldError.forbidden(
                    mpath,
                    "must not specify anything other than name and generateName, but metadata is implicitly specified",
                )
            )
    if s.embedded and not s.preserve_unknown and not s.properties:
        errs.append(
            FieldError.required(
                _join(path, "properties"),
                "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
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
    if not skip_anyof:
        for i, sub in enumerate(raw.get("anyOf") or []):
            _validate_nested(sub, False, level, f"{_join(path, 'anyOf')}[{i}]", errs, False)
    for i, sub in enumerate(raw.get("allOf") or []):
        _validate_nested(
            sub,
            skip_first_allof_anyof and i == 0,
            level,
            f"{_join(path, 'allOf')}[{i}]",
            errs,
            allow_xvalidations,
        )
    for i, sub in enumerate(raw.get("oneOf") or []):
        _validate_nested(sub, False, level, f"{_join(path, 'oneOf')}[{i}]", errs, False)
    _validate_nested(raw.get("not"), False, level, _join(path, "not"), errs, False)
    pattern = raw.get("pattern")
    if isinstance(pattern, str) and pattern:
        try:
            compile_go_regexp(pattern)
        except Exception as exc:
            errs.append(
                FieldError.invalid(
                    _join(path, "pattern"),
                    pattern,
                    f"must be a valid regular expression, but isn't: {go_regexp_error(pattern, exc)}",
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
    if not isinstance(raw, dict):
        return
    _validate_value_validation(raw, skip_anyof, False, level, path, errs, allow_xvalidations)
    items = raw.get("items")
    if isinstance(items, dict):
        _validate_nested(items, False, level, _join(path, "items"), errs, allow_xvalidations)
    props = raw.get("properties")
    if isinstance(props, dict):
        for k, v in props.items():
            _validate_nested(
                v, False, "field", f"{_join(path, 'properties')}[{k}]", errs, allow_xvalidations
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
        errs.append(FieldError.forbidden(_join(path, key), detail))
    if isinstance(props, dict) and "metadata" in props:
        errs.append(
            FieldError.forbidden(
                f"{_join(path, 'properties')}[metadata]", "must not be specified in a nested context"
            )
        )


# ---------------------------------------------------------------- default checks
def _validate_defaults(root: st.Structural, path: str, opts: _Options) -> list[FieldError]:
    errs: list[FieldError] = []
    _defaults_walk(root.as_root(), root.as_root(), path, False, opts, errs)
    return errs


def _defaults_walk(
    s: st.Structural,
    root: st.Structural,
    path: str,
    inside_meta: bool,
    opts: _Options,
    errs: list[FieldError],
) -> None:
    if s.embedded:
        inside_meta = False
        root = s
    if s.has_default and not inside_meta:
        value = s.default
        dpath = _join(path, "default")
        if opts.require_pruned_defaults:
            pruned = copy.deepcopy(value)
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
        _defaults_walk(s.items, root, _join(path, "items"), inside_meta, opts, errs)
    for k in sorted(s.properties):
        sub_meta = inside_meta or (s.embedded and k in st.META_FIELDS)
        _defaults_walk(
            s.properties[k], root, f"{_join(path, 'properties')}[{k}]", sub_meta, opts, errs
        )


def _rebase(err: FieldError, base: str) -> FieldError:
    field = base if err.field == ROOT_FIELD else f"{base}.{err.field}"
    return FieldError(err.type, field, err.detail, err.bad_value)


# ---------------------------------------------------------- compile with a cache
_CACHE_LIMIT: Final = 512
_cache: OrderedDict[tuple[str, str, str], CompiledSchema] = OrderedDict()
_cache_lock = threading.Lock()


def compile_crd_version(crd: dict[str, Any], version: str) -> CompiledSchema:
    """The compiled schema of ``spec.versions[name=version].schema.openAPIV3Schema``.

    Cached per (metadata.uid, metadata.generation or resourceVersion, version); a CRD
    without uid is cached by identity of its schema content. Raises
    :class:`SchemaError` if the version does not exist, has no schema, or the schema
    (or one of its CEL rules) does not compile.
    """
    meta = _as_dict(crd.get("metadata"))
    uid = _as_str(meta.get("uid"))
    gen = meta.get("generation")
    stamp = str(gen) if gen is not None else _as_str(meta.get("resourceVersion"))
    key: tuple[str, str, str] | None = (uid, stamp, version) if uid and stamp else None
    if key is not None:
        with _cache_lock:
            hit = _cache.get(key)
            if hit is not None:
                _cache.move_to_end(key)
                return hit
    spec = _as_dict(crd.get("spec"))
    versions = _as_list(spec.get("versions"))
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
                [_as_str(v.get("name")) for v in versions if isinstance(v, dict)],
            )
        ]
    )
