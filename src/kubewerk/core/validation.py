"""ObjectMeta validation with Kubernetes' exact messages and field paths.

Follows k8s.io/apimachinery v0.36: ``pkg/api/validation/objectmeta.go`` and
``generic.go``, ``pkg/apis/meta/v1/validation`` (labels, managedFields),
``pkg/api/validate/content`` (DNS names, qualified names, label values, path segments)
and the create path of k8s.io/apiserver's ``rest.BeforeCreate``: the kind's own name
rule first, then, only if that passed, the path-segment rule.

Name rules per kind (their ``ValidateObjectMeta`` calls): ``label`` (RFC 1123 label)
for Namespace; ``dns1035-label`` (RFC 1035 label: a letter first) for Service;
``subdomain`` (RFC 1123 subdomain) for ConfigMap, Secret,
ServiceAccount, both Events, Lease and every custom resource; ``path-segment`` alone
for kinds without their own rule.

Every function returns ``list[FieldError]`` (empty when valid); the ``is_*`` helpers
return Kubernetes' error strings. Labels and annotations are checked in key order
(Go iterates maps randomly, so only the order of errors can differ from a real server).
"""

from __future__ import annotations

import heapq
import json
import re
import secrets
import unicodedata
from collections.abc import Callable, Container, Mapping, Sequence
from typing import Any, Final, Literal

from kubewerk.core.errors import FieldError
from kubewerk.core.gofmt import GoText, go_quote
from kubewerk.core.gvk import split_api_version
from kubewerk.core.selectors import (
    is_label_key,
    is_label_value,
    max_len_error,
    regex_error,
)

__all__ = [
    "TOTAL_ANNOTATION_SIZE_LIMIT",
    "NameRule",
    "finalizer_warnings",
    "generate_name",
    "is_config_map_key",
    "is_dns1035_label",
    "is_dns1123_label",
    "is_dns1123_subdomain",
    "is_label_value",
    "is_path_segment_name",
    "is_path_segment_prefix",
    "is_qualified_name",
    "name_errors",
    "validate_annotations",
    "validate_config_keys",
    "validate_finalizers",
    "validate_labels",
    "validate_managed_fields",
    "validate_object_meta",
    "validate_object_meta_for_create",
    "validate_object_meta_update",
    "validate_owner_references",
]

NameRule = Literal["subdomain", "label", "dns1035-label", "path-segment"]

TOTAL_ANNOTATION_SIZE_LIMIT: Final = 256 * 1024
"""``TotalAnnotationSizeLimitB``: keys plus values, in bytes."""

_LABEL_FMT: Final = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_LABEL_RE: Final = re.compile(_LABEL_FMT)
_LABEL_MSG: Final = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
_SUBDOMAIN_FMT: Final = _LABEL_FMT + "(\\." + _LABEL_FMT + ")*"
_SUBDOMAIN_RE: Final = re.compile(_SUBDOMAIN_FMT)
_SUBDOMAIN_MSG: Final = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
    "or '.', and must start and end with an alphanumeric character"
)
_DNS1035_FMT: Final = "[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1035_RE: Final = re.compile(_DNS1035_FMT)
_DNS1035_MSG: Final = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with "
    "an alphabetic character, and end with an alphanumeric character"
)


def _blen(value: str) -> int:
    return len(value.encode("utf-8", "surrogatepass"))


# ---------------------------------------------------------------- fast acceptance
# The common valid case answered without building any message: each pattern accepts
# only ASCII text that the detailed checks below accept too (so character and byte
# lengths agree); anything it does not accept takes the detailed path, which alone
# decides the errors and their order.
_NAME_PART: Final = "[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?"
_SUBDOMAIN_OK: Final = re.compile(_SUBDOMAIN_FMT).fullmatch
_LABEL_OK: Final = re.compile(_LABEL_FMT).fullmatch
# qualified name (label key, annotation key, finalizer) of at most 63 characters
_QUALIFIED_OK: Final = re.compile("(?:" + _SUBDOMAIN_FMT + "/)?" + _NAME_PART).fullmatch
_LABEL_VALUE_OK: Final = re.compile(_NAME_PART).fullmatch


# Strings a pattern above accepted lately, per pattern: the same label keys, label
# values, generateName prefixes and namespaces come back on write after write, and a
# set lookup is cheaper than a match. Only exact ``str`` values that matched are added
# (the patterns are pure functions of the text); each set is emptied when full.
_SEEN_LIMIT: Final = 2048
_qualified_seen: set[str] = set()
_label_value_seen: set[str] = set()
_label_seen: set[str] = set()
_prefix_seen: set[str] = set()  # generateName prefixes, subdomain rule, before masking


def _accepts(seen: set[str], value: str, text: str, max_len: int, ok: Callable[[str], Any]) -> bool:
    """Whether ``text`` (``value`` itself, or the form of it a rule matches) is at most
    ``max_len`` characters and ``ok`` matches it; if so ``value`` joins ``seen`` (the
    callers look there first), which is emptied when full."""
    if len(text) <= max_len and ok(text) is not None:
        if len(seen) >= _SEEN_LIMIT:
            seen.clear()
        seen.add(value)
        return True
    return False


def _qualified_ok(key: Any) -> bool:
    """A string key ``is_qualified_name`` certainly has no error for."""
    if type(key) is not str:
        return False
    return key in _qualified_seen or _accepts(_qualified_seen, key, key, 63, _QUALIFIED_OK)


def _label_value_ok(value: str) -> bool:
    """A label value (an exact ``str``) ``is_label_value`` certainly has no error for."""
    if not value or value in _label_value_seen:
        return True
    return _accepts(_label_value_seen, value, value, 63, _LABEL_VALUE_OK)


def _labels_ok(labels: Any) -> bool:
    """``validate_labels(_str_map(labels))`` is certainly empty (None counts as no labels)."""
    if labels is None:
        return True
    if type(labels) is not dict:
        return False
    for key, value in labels.items():
        if type(value) is not str or not _label_value_ok(value) or not _qualified_ok(key):
            return False
    return True


def _annotations_ok(annotations: Any) -> bool:
    """``validate_annotations(_str_map(annotations))`` is certainly empty."""
    if annotations is None:
        return True
    if type(annotations) is not dict:
        return False
    chars = 0
    for key, value in annotations.items():
        if type(value) is not str or type(key) is not str:
            return False
        chars += len(key) + len(value)
    # at most 4 UTF-8 bytes per character: within the limit whatever the text (checked
    # before the keys, so that an oversized map is not matched key by key twice)
    if chars * 4 > TOTAL_ANNOTATION_SIZE_LIMIT:
        return False
    return all(_qualified_ok(key.lower()) for key in annotations)


def _name_ok(value: Any, rule: NameRule, prefix: bool) -> bool:
    """``name_errors(value, rule, prefix=prefix)`` and the path-segment rule are both empty."""
    if type(value) is not str:
        return False
    if rule == "path-segment":
        return "/" not in value and "%" not in value and (prefix or value not in (".", ".."))
    if rule == "label" and not prefix:  # namespaces
        return value in _label_seen or _accepts(_label_seen, value, value, 63, _LABEL_OK)
    if rule == "subdomain" and prefix:  # generateName: the prefix is remembered unmasked
        if value in _prefix_seen:
            return True
        return _accepts(_prefix_seen, value, _mask_trailing_dash(value), 253, _SUBDOMAIN_OK)
    if prefix:
        value = _mask_trailing_dash(value)
    if rule == "label":
        return len(value) <= 63 and _LABEL_OK(value) is not None
    if rule == "dns1035-label":
        return not is_dns1035_label(value)
    # a subdomain never holds '/' or '%' and is never '.' or '..'
    return len(value) <= 253 and _SUBDOMAIN_OK(value) is not None


def _create_meta_ok(meta: Any, namespaced: bool, name_rule: NameRule) -> bool:
    """True only when ``validate_object_meta_for_create`` certainly returns no error."""
    if type(meta) is not dict:
        return False
    generate = meta.get("generateName")
    if generate is not None and generate != "" and not _name_ok(generate, name_rule, True):
        return False
    name = meta.get("name")
    if not name or not _name_ok(name, name_rule, False):
        return False
    namespace = meta.get("namespace")
    if namespaced:
        if not namespace or not _name_ok(namespace, "label", False):
            return False
    elif namespace is not None and namespace != "":
        return False
    generation = meta.get("generation")
    if generation is not None and type(generation) is not int:
        return False
    if generation is not None and generation < 0:
        return False
    if not _labels_ok(meta.get("labels")) or not _annotations_ok(meta.get("annotations")):
        return False
    owners = meta.get("ownerReferences")
    if owners is not None and owners != []:
        return False
    # Every create carries the field manager's entry: entries that pass
    # ValidateManagedFields (the only check reading them) leave the rest to decide.
    entries = meta.get("managedFields")
    if entries is not None and (type(entries) is not list or validate_managed_fields(entries)):
        return False
    finalizers = meta.get("finalizers")
    if finalizers is not None:
        if type(finalizers) is not list:
            return False
        for item in finalizers:
            if not _qualified_ok(item):
                return False
        if ORPHAN_FINALIZER in finalizers and FOREGROUND_FINALIZER in finalizers:
            return False
    return True


def is_dns1123_label(value: str) -> list[str]:
    """``IsDNS1123Label``: at most 63 bytes of ``[a-z0-9]([-a-z0-9]*[a-z0-9])?``."""
    errs: list[str] = []
    if _blen(value) > 63:
        errs.append(max_len_error(63))
    if not _LABEL_RE.fullmatch(value):
        if _SUBDOMAIN_RE.fullmatch(value):
            errs.append("must not contain dots")
        else:
            errs.append(regex_error(_LABEL_MSG, _LABEL_FMT, "my-name", "123-abc"))
    return errs


def is_dns1123_subdomain(value: str) -> list[str]:
    """``IsDNS1123Subdomain``: at most 253 bytes of dot-separated RFC 1123 labels."""
    errs: list[str] = []
    if _blen(value) > 253:
        errs.append(max_len_error(253))
    if not _SUBDOMAIN_RE.fullmatch(value):
        errs.append(regex_error(_SUBDOMAIN_MSG, _SUBDOMAIN_FMT, "example.com"))
    return errs


def is_dns1035_label(value: str) -> list[str]:
    """``IsDNS1035Label``: like a DNS-1123 label but starting with a letter."""
    errs: list[str] = []
    if _blen(value) > 63:
        errs.append(max_len_error(63))
    if not _DNS1035_RE.fullmatch(value):
        errs.append(regex_error(_DNS1035_MSG, _DNS1035_FMT, "my-name", "abc-123"))
    return errs


def is_qualified_name(value: str) -> list[str]:
    """``IsQualifiedName`` (label keys, annotation keys, finalizers)."""
    return is_label_key(value)


def is_path_segment_prefix(name: str) -> list[str]:
    """``IsPathSegmentPrefix``: may not contain ``/`` or ``%``."""
    return [f"may not contain '{c}'" for c in ("/", "%") if c in name]


def is_path_segment_name(name: str) -> list[str]:
    """``IsPathSegmentName``: not ``.`` or ``..``, and no ``/`` or ``%``."""
    if name in (".", ".."):
        return [f"may not be '{name}'"]
    return is_path_segment_prefix(name)


def _mask_trailing_dash(name: str) -> str:
    """``maskTrailingDash``: upstream replaces the last *two* characters by ``a``."""
    if len(name) > 1 and name.endswith("-"):
        return name[:-2] + "a"
    return name


def name_errors(name: str, rule: NameRule, *, prefix: bool = False) -> list[str]:
    """The ``ValidateNameFunc`` of ``rule`` (``prefix=True`` for ``generateName``)."""
    if rule == "path-segment":
        return is_path_segment_prefix(name) if prefix else is_path_segment_name(name)
    if prefix:
        name = _mask_trailing_dash(name)
    if rule == "dns1035-label":
        return is_dns1035_label(name)
    return is_dns1123_label(name) if rule == "label" else is_dns1123_subdomain(name)


_GENERATED_ALPHABET: Final = "bcdfghjklmnpqrstvwxz2456789"


def generate_name(base: str) -> str:
    """``SimpleNameGenerator.GenerateName``: base cut to 58 chars plus 5 random ones."""
    return base[:58] + "".join(secrets.choice(_GENERATED_ALPHABET) for _ in range(5))


_CONFIG_KEY_FMT: Final = "[-._a-zA-Z0-9]+"
_CONFIG_KEY_RE: Final = re.compile(_CONFIG_KEY_FMT)
_CONFIG_KEY_MSG: Final = (
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.'"
)


def is_config_map_key(value: str) -> list[str]:
    """``IsConfigMapKey`` (apimachinery ``util/validation``): a ConfigMap's or Secret's
    data key is at most 253 bytes of ``[-._a-zA-Z0-9]`` and neither ``.``, ``..`` nor
    starts with ``..``; the errors in kube's order."""
    matched = _CONFIG_KEY_RE.fullmatch(value) is not None
    if matched and len(value) <= 253 and not value.startswith("."):
        return []  # the common key, answered without building a message
    errs: list[str] = []
    if _blen(value) > 253:
        errs.append(max_len_error(253))
    if not matched:
        errs.append(
            regex_error(_CONFIG_KEY_MSG, _CONFIG_KEY_FMT, "key.name", "KEY_NAME", "key-name")
        )
    if value == ".":
        errs.append("must not be '.'")
    elif value == "..":
        errs.append("must not be '..'")
    elif value.startswith(".."):
        errs.append("must not start with '..'")
    return errs


def validate_config_keys(data: Any, path: str) -> list[FieldError]:
    """``IsConfigMapKey`` on each key of a ``data``-like map (keys in sorted order, as
    everywhere here); the field path is ``<path>[<key>]`` and the bad value the key.
    Anything but a mapping has no keys to check."""
    if not isinstance(data, Mapping):
        return []
    errs: list[FieldError] = []
    for key in sorted(k for k in data if isinstance(k, str)):
        errs.extend(
            FieldError.invalid(f"{path}[{key}]", key, msg) for msg in is_config_map_key(key)
        )
    return errs


# ------------------------------------------------------------------------ rendering


def _go_marshal(value: Any) -> GoText:
    """A bad value as field.Error shows a Go struct, slice or time: ``json.Marshal``'s text,
    object fields in the order given (a struct's field order), ``<``, ``>``, ``&`` escaped."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return GoText(text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"))


_OWNER_FIELDS: Final = ("apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion")


def _owner_json(ref: Mapping[str, Any]) -> dict[str, Any]:
    """``metav1.OwnerReference`` as Go encodes it (field order, omitempty pointers)."""
    out: dict[str, Any] = {}
    for key in _OWNER_FIELDS:
        value = ref.get(key)
        if key in ("controller", "blockOwnerDeletion"):
            if isinstance(value, bool):
                out[key] = value
        else:
            out[key] = value if isinstance(value, str) else ""
    return out


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _str_map(value: Any) -> dict[str, str]:
    if not isinstance(value, Mapping):
        return {}
    return {str(k): v if isinstance(v, str) else "" for k, v in value.items()}


def _str_list(value: Any) -> list[str]:
    if not isinstance(value, Sequence) or isinstance(value, str):
        return []
    return [v if isinstance(v, str) else "" for v in value]


# ---------------------------------------------------------------------- validators


def validate_labels(labels: Mapping[str, str], path: str = "metadata.labels") -> list[FieldError]:
    """``ValidateLabels``: keys are qualified names, values label values (path has no key)."""
    if _labels_ok(labels):
        return []
    errs: list[FieldError] = []
    for key in sorted(labels):
        if not _qualified_ok(key):
            errs.extend(FieldError.invalid(path, key, msg) for msg in is_qualified_name(key))
        value = labels[key]
        if not _label_value_ok(value):
            errs.extend(FieldError.invalid(path, value, msg) for msg in is_label_value(value))
    return errs


def validate_annotations(
    annotations: Mapping[str, str], path: str = "metadata.annotations"
) -> list[FieldError]:
    """``ValidateAnnotations``: keys (lower-cased) are qualified names; 256 KiB in total."""
    if _annotations_ok(annotations):
        return []
    errs: list[FieldError] = []
    for key in sorted(annotations):
        lower = key.lower()
        if not _qualified_ok(lower):
            errs.extend(FieldError.invalid(path, key, msg) for msg in is_qualified_name(lower))
    total = sum(_blen(k) + _blen(v) for k, v in annotations.items())
    if total > TOTAL_ANNOTATION_SIZE_LIMIT:
        errs.append(FieldError.too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT))
    return errs


_REPEATED_CONTROLLER_BUDGET: Final = 1024 * 1024
"""Characters of the whole ownerReferences list (as shown) the repeated-controller
errors may carry between them; at least one such error is always given."""


def validate_owner_references(
    refs: Sequence[Mapping[str, Any]], path: str = "metadata.ownerReferences"
) -> list[FieldError]:
    """``ValidateOwnerReferences``: apiVersion (with a version), kind, name, uid; no
    core/v1 Event owners; at most one ``controller: true``. Paths carry no index.

    Kube gives one error per controller after the first, each showing the whole list:
    quadratic in the list, so a 3 MiB list of controllers would be answered with
    terabytes. Here the list is rendered once, and the repeated-controller errors stop
    once they would carry more than 1 MiB of it between them (the first is always
    given; lists of a few kilobytes get every error kube gives)."""
    errs: list[FieldError] = []
    first_controller = ""
    shown: GoText | None = None  # the whole list as Go shows it, rendered once
    repeats_left = 0
    for ref in refs:
        api_version = _str(ref.get("apiVersion"))
        kind = _str(ref.get("kind"))
        group, version = split_api_version(api_version)
        if not version:
            errs.append(
                FieldError.invalid(f"{path}.apiVersion", api_version, "version must not be empty")
            )
        if not kind:
            errs.append(FieldError.invalid(f"{path}.kind", kind, "must not be empty"))
        name = _str(ref.get("name"))
        if not name:
            errs.append(FieldError.invalid(f"{path}.name", name, "must not be empty"))
        uid = _str(ref.get("uid"))
        if not uid:
            errs.append(FieldError.invalid(f"{path}.uid", uid, "must not be empty"))
        if (group, version, kind) == ("", "v1", "Event"):
            errs.append(
                FieldError.invalid(
                    path,
                    _go_marshal(_owner_json(ref)),
                    "/v1, Kind=Event is disallowed from being an owner",
                )
            )
        if ref.get("controller") is True:
            current = f"{kind}/{name}"
            if first_controller:
                if shown is None:
                    shown = _go_marshal([_owner_json(r) for r in refs])
                    repeats_left = max(1, _REPEATED_CONTROLLER_BUDGET // len(shown.text))
                if repeats_left:
                    repeats_left -= 1
                    errs.append(
                        FieldError.invalid(
                            path,
                            shown,
                            "Only one reference can have Controller set to true. Found "
                            f'"true" in references for {first_controller} and {current}',
                        )
                    )
            else:
                first_controller = current
    return errs


ORPHAN_FINALIZER: Final = "orphan"
FOREGROUND_FINALIZER: Final = "foregroundDeletion"


def validate_finalizers(
    finalizers: Sequence[str], path: str = "metadata.finalizers"
) -> list[FieldError]:
    """``ValidateFinalizers``: qualified names; not both ``orphan`` and ``foregroundDeletion``."""
    errs: list[FieldError] = []
    for name in finalizers:
        if not _qualified_ok(name):
            errs.extend(FieldError.invalid(path, name, msg) for msg in is_qualified_name(name))
    if ORPHAN_FINALIZER in finalizers and FOREGROUND_FINALIZER in finalizers:
        errs.append(
            FieldError.invalid(
                path,
                _go_marshal(list(finalizers)),
                f"finalizer {ORPHAN_FINALIZER} and {FOREGROUND_FINALIZER} cannot be both set",
            )
        )
    return errs


_STANDARD_FINALIZERS: Final = frozenset({ORPHAN_FINALIZER, FOREGROUND_FINALIZER, "kubernetes"})


def finalizer_warnings(
    finalizers: Sequence[str],
    old_finalizers: Sequence[str] | None = None,
    *,
    limit: int | None = None,
) -> list[str]:
    """Warnings kube-apiserver sends for custom resources' finalizers (``Warning`` headers).

    Only finalizers added by this write are checked (all of them on create), sorted, as
    apiextensions' ``generateWarningsFromObj`` does. Built-in kinds send none.

    Linear in the number of finalizers: a domain-qualified name with a path that
    ``is_qualified_name`` accepts (the common case) costs one set lookup or one match,
    and only the names a warning is given for are ordered and quoted. With ``limit``,
    the answer is the first ``limit`` names' warnings of the full answer (at least
    ``limit`` warnings when there are that many), found without sorting the rest: a
    caller that sends only so many (a response's few kilobytes of ``Warning`` headers)
    pays for those alone.
    """
    if not finalizers:
        return []  # nothing added
    old: Container[str] = set(old_finalizers) if old_finalizers else ()
    flagged = {
        name
        for name in finalizers
        if name not in old
        and not (type(name) is str and "/" in name and _qualified_ok(name))
        and name not in _STANDARD_FINALIZERS
    }
    ordered = sorted(flagged) if limit is None else heapq.nsmallest(limit, flagged)
    out: list[str] = []
    for name in ordered:
        quoted = go_quote(name)
        out.extend(f"metadata.finalizers: {quoted}: {msg}" for msg in is_qualified_name(name))
        if "/" not in name:
            if "." in name:
                out.append(
                    f"metadata.finalizers: {quoted}: prefer a "
                    "domain-qualified finalizer name including a path (/) to "
                    "avoid accidental conflicts with other finalizer writers"
                )
            else:
                out.append(
                    f"metadata.finalizers: {quoted}: prefer a domain-qualified finalizer "
                    "name to avoid accidental conflicts with other finalizer writers"
                )
    return out


def _go_unicode_format(ch: str) -> str:
    """Go's ``%#U``: ``U+0041 'A'`` (the quoted char only when printable)."""
    code = f"U+{ord(ch):04X}"
    return f"{code} '{ch}'" if _is_go_printable(ch) else code


def _is_go_printable(ch: str) -> bool:
    """``unicode.IsPrint``: letters, marks, numbers, punctuation, symbols and ASCII space."""
    if ch == " ":
        return True
    return unicodedata.category(ch)[0] in "LMNPS"


_OPERATIONS: Final = frozenset(("Apply", "Update"))
_FIELDS_TYPES: Final = frozenset(("", "FieldsV1"))


def _entry_ok(entry: dict[str, Any]) -> bool:
    """An entry the checks below certainly find nothing in: exact ``str`` values (or
    none, where none is allowed), a printable manager of at most 32 characters (so at
    most 128 bytes) and a subresource of at most 64 characters (at most 256 bytes)."""
    operation = entry.get("operation")
    if type(operation) is not str or operation not in _OPERATIONS:
        return False
    fields_type = entry.get("fieldsType")
    if fields_type is not None and (
        type(fields_type) is not str or fields_type not in _FIELDS_TYPES
    ):
        return False
    manager = entry.get("manager")
    if manager is not None and (
        type(manager) is not str or len(manager) > 32 or not manager.isprintable()
    ):
        return False
    subresource = entry.get("subresource")
    return subresource is None or (type(subresource) is str and len(subresource) <= 64)


def validate_managed_fields(
    entries: Sequence[Any], path: str = "metadata.managedFields"
) -> list[FieldError]:
    """``ValidateManagedFields``: operation, fieldsType, manager, subresource."""
    errs: list[FieldError] = []
    for i, entry in enumerate(entries):
        if type(entry) is dict and _entry_ok(entry):
            continue
        item = entry if isinstance(entry, Mapping) else {}
        here = f"{path}[{i}]"
        operation = _str(item.get("operation"))
        if operation not in ("Apply", "Update"):
            errs.append(
                FieldError.invalid(f"{here}.operation", operation, "must be `Apply` or `Update`")
            )
        fields_type = _str(item.get("fieldsType"))
        if fields_type and fields_type != "FieldsV1":
            errs.append(FieldError.invalid(f"{here}.fieldsType", fields_type, "must be `FieldsV1`"))
        manager = _str(item.get("manager"))
        # at most 4 UTF-8 bytes a character: 32 characters are within 128 bytes
        if len(manager) > 32 and _blen(manager) > 128:
            errs.append(FieldError.too_long(f"{here}.manager", 128))
        # str.isprintable is unicode.IsPrint on every character (categories L, M, N, P,
        # S and the ASCII space, from the same Unicode database): only a manager with a
        # character that is not needs the walk that names it
        if not manager.isprintable():
            position = 0
            for ch in manager:
                if not _is_go_printable(ch):
                    errs.append(
                        FieldError.invalid(
                            f"{here}.manager",
                            manager,
                            f"invalid character {_go_unicode_format(ch)} (at position {position})",
                        )
                    )
                position += _blen(ch)
        if _blen(_str(item.get("subresource"))) > 256:
            errs.append(FieldError.too_long(f"{here}.subresource", 256))
    return errs


def _validate_common(meta: Mapping[str, Any], namespaced: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    namespace = _str(meta.get("namespace"))
    if namespaced:
        if not namespace:
            errs.append(FieldError.required("metadata.namespace"))
        else:
            errs.extend(
                FieldError.invalid("metadata.namespace", namespace, msg)
                for msg in name_errors(namespace, "label")
            )
    elif namespace:
        errs.append(FieldError.forbidden("metadata.namespace", "not allowed on this type"))
    generation = meta.get("generation")
    if isinstance(generation, int) and not isinstance(generation, bool) and generation < 0:
        errs.append(
            FieldError.invalid(
                "metadata.generation", generation, "must be greater than or equal to 0"
            )
        )
    errs.extend(validate_labels(_str_map(meta.get("labels"))))
    errs.extend(validate_annotations(_str_map(meta.get("annotations"))))
    refs = meta.get("ownerReferences")
    if isinstance(refs, Sequence) and not isinstance(refs, str):
        errs.extend(validate_owner_references([r if isinstance(r, Mapping) else {} for r in refs]))
    errs.extend(validate_finalizers(_str_list(meta.get("finalizers"))))
    managed = meta.get("managedFields")
    if isinstance(managed, Sequence) and not isinstance(managed, str):
        errs.extend(validate_managed_fields(managed))
    return errs


def validate_object_meta(
    meta: Mapping[str, Any], *, namespaced: bool, name_rule: NameRule = "subdomain"
) -> list[FieldError]:
    """``ValidateObjectMeta(meta, namespaced, nameFn, "metadata")`` for one name rule.

    Checks generateName (as a prefix), name (``Required value: name or generateName is
    required`` when empty), namespace (an RFC 1123 label; forbidden on cluster-scoped
    kinds), generation, labels, annotations, ownerReferences, finalizers, managedFields.
    """
    errs = _validate_names(meta, name_rule)
    errs.extend(_validate_common(meta, namespaced))
    return errs


def _validate_names(meta: Mapping[str, Any], name_rule: NameRule) -> list[FieldError]:
    """generateName (as a prefix) and name under one name rule."""
    errs: list[FieldError] = []
    generate = _str(meta.get("generateName"))
    if generate:
        errs.extend(
            FieldError.invalid("metadata.generateName", generate, msg)
            for msg in name_errors(generate, name_rule, prefix=True)
        )
    name = _str(meta.get("name"))
    if not name:
        errs.append(FieldError.required("metadata.name", "name or generateName is required"))
    else:
        errs.extend(
            FieldError.invalid("metadata.name", name, msg) for msg in name_errors(name, name_rule)
        )
    return errs


def validate_object_meta_for_create(
    meta: Mapping[str, Any], *, namespaced: bool, name_rule: NameRule = "subdomain"
) -> list[FieldError]:
    """What a create is refused for, in ``rest.BeforeCreate``'s order: the kind's rule,
    then (only if that passed) the same checks with the path-segment name rule."""
    if _create_meta_ok(meta, namespaced, name_rule):
        return []
    errs = validate_object_meta(meta, namespaced=namespaced, name_rule=name_rule)
    if errs or name_rule == "path-segment":
        return errs
    # the rest of ObjectMeta passed already; only the names meet the second rule
    return _validate_names(meta, "path-segment")


def validate_object_meta_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[FieldError]:
    """``ValidateObjectMetaAccessorUpdate``: no new finalizers while deleting, a
    resourceVersion, no decreasing generation, immutable identity fields, and the
    label/annotation/ownerReference/managedFields checks on the new metadata."""
    errs: list[FieldError] = []
    if old.get("deletionTimestamp"):
        extra = sorted(
            set(_str_list(new.get("finalizers"))) - set(_str_list(old.get("finalizers")))
        )
        if extra:
            shown = "[]string{" + ", ".join(go_quote(e) for e in extra) + "}"
            errs.append(
                FieldError.forbidden(
                    "metadata.finalizers",
                    "no new finalizers can be added if the object "
                    f"is being deleted, found new finalizers {shown}",
                )
            )
    rv = _str(new.get("resourceVersion"))
    if not rv:
        errs.append(
            FieldError.invalid("metadata.resourceVersion", rv, "must be specified for an update")
        )
    new_gen, old_gen = new.get("generation") or 0, old.get("generation") or 0
    if isinstance(new_gen, int) and isinstance(old_gen, int) and new_gen < old_gen:
        errs.append(FieldError.invalid("metadata.generation", new_gen, "must not be decremented"))
    for key in (
        "name",
        "namespace",
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
    ):
        new_value, old_value = new.get(key), old.get(key)
        if key in ("name", "namespace", "uid"):
            new_value, old_value = _str(new_value), _str(old_value)
        if new_value != old_value:
            bad: Any = new_value
            if key in ("creationTimestamp", "deletionTimestamp"):
                bad = _go_marshal(new_value)
            errs.append(FieldError.invalid(f"metadata.{key}", bad, "field is immutable"))
    errs.extend(validate_labels(_str_map(new.get("labels"))))
    errs.extend(validate_annotations(_str_map(new.get("annotations"))))
    refs = new.get("ownerReferences")
    if isinstance(refs, Sequence) and not isinstance(refs, str):
        errs.extend(validate_owner_references([r if isinstance(r, Mapping) else {} for r in refs]))
    managed = new.get("managedFields")
    if isinstance(managed, Sequence) and not isinstance(managed, str):
        errs.extend(validate_managed_fields(managed))
    return errs
