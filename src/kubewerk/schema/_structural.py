"""The structural skeleton of a schema: defaulting, pruning, list-type and embedded checks.

Mirrors ``k8s.io/apiextensions-apiserver/pkg/apiserver/schema``: only ``properties``,
``items`` and ``additionalProperties`` outside the junctors make up the skeleton;
``allOf``/``anyOf``/``oneOf``/``not`` only validate values.
"""

from __future__ import annotations

import re
from typing import Any, Final

from kubewerk.core.errors import FieldError
from kubewerk.core.gofmt import go_json
from kubewerk.core.gvk import parse_api_version
from kubewerk.core.jsoncopy import copy_tree
from kubewerk.core.meta import OBJECT_META_FIELDS

_NO_DEFAULT: Final = object()
_SCALARS: Final = frozenset({str, int, float, bool, type(None)})
META_FIELDS: Final = frozenset({"apiVersion", "kind", "metadata"})


class Structural:
    """One node of the structural schema."""

    __slots__ = (
        "additional",
        "additional_bool",
        "default",
        "defaulted_props",
        "defaults_below",
        "embedded",
        "embedded_below",
        "enum",
        "format",
        "has_defaults",
        "has_embedded",
        "has_lists",
        "has_rules",
        "int_or_string",
        "items",
        "known",
        "list_map_keys",
        "list_type",
        "lists_below",
        "map_type",
        "max_items",
        "max_length",
        "max_properties",
        "nullable",
        "preserve_unknown",
        "properties",
        "raw",
        "rules",
        "type",
    )

    def __init__(self, schema: dict[str, Any]) -> None:
        self.raw = schema
        t = schema.get("type")
        self.type: str = t if isinstance(t, str) else ""
        props = schema.get("properties")
        self.properties: dict[str, Structural] = (
            {k: Structural(v) for k, v in props.items() if isinstance(v, dict)}
            if isinstance(props, dict)
            else {}
        )
        addl = schema.get("additionalProperties")
        # additionalProperties: true has a nil structural schema but is present
        self.additional_bool = addl is True or isinstance(addl, dict)
        self.additional: Structural | None = Structural(addl) if isinstance(addl, dict) else None
        items = schema.get("items")
        self.items: Structural | None = Structural(items) if isinstance(items, dict) else None
        if "default" in schema:
            d = schema["default"]
            self.default: Any = copy_tree(d)
        else:
            self.default = _NO_DEFAULT
        self.nullable = schema.get("nullable") is True
        self.preserve_unknown = schema.get("x-kubernetes-preserve-unknown-fields") is True
        self.embedded = schema.get("x-kubernetes-embedded-resource") is True
        self.int_or_string = schema.get("x-kubernetes-int-or-string") is True
        lt = schema.get("x-kubernetes-list-type")
        self.list_type: str | None = lt if isinstance(lt, str) else None
        keys = schema.get("x-kubernetes-list-map-keys")
        self.list_map_keys: list[str] = (
            [k for k in keys if isinstance(k, str)] if isinstance(keys, list) else []
        )
        mt = schema.get("x-kubernetes-map-type")
        self.map_type: str | None = mt if isinstance(mt, str) else None
        rules = schema.get("x-kubernetes-validations")
        self.rules: list[dict[str, Any]] = (
            [r for r in rules if isinstance(r, dict)] if isinstance(rules, list) else []
        )
        self.max_items = _opt_int(schema.get("maxItems"))
        self.max_length = _opt_int(schema.get("maxLength"))
        self.max_properties = _opt_int(schema.get("maxProperties"))
        f = schema.get("format")
        self.format: str = f if isinstance(f, str) else ""
        e = schema.get("enum")
        self.enum: list[Any] | None = e if isinstance(e, list) else None

        if not self.properties and self.additional is None and self.items is None:
            # a leaf: nothing below it
            self.has_defaults: bool = False
            self.defaulted_props: tuple[tuple[str, Structural], ...] = ()
            self.defaults_below: dict[str, Structural] = {}
            self.lists_below: dict[str, Structural] = {}
            self.embedded_below: dict[str, Structural] = {}
            self.known: frozenset[str] = META_FIELDS if self.embedded else frozenset()
            self.has_lists: bool = self.list_type in ("set", "map")
            self.has_embedded: bool = self.embedded
            self.has_rules: bool = bool(self.rules)
            return
        children: list[Structural] = list(self.properties.values())
        if self.additional is not None:
            children.append(self.additional)
        if self.items is not None:
            children.append(self.items)
        self.has_defaults = any(c.default is not _NO_DEFAULT or c.has_defaults for c in children)
        # for defaulting: the properties that carry a default, and those with defaults inside
        self.defaulted_props = tuple(
            (k, p) for k, p in self.properties.items() if p.default is not _NO_DEFAULT
        )
        self.defaults_below = {k: p for k, p in self.properties.items() if p.has_defaults}
        # for list checks: the properties with set/map lists inside
        self.lists_below = {k: p for k, p in self.properties.items() if p.has_lists}
        # for ObjectMeta coercion: the properties with embedded resources inside
        self.embedded_below = {k: p for k, p in self.properties.items() if p.has_embedded}
        # for pruning: the keys a map here keeps without looking further at the key
        self.known = frozenset(self.properties) | (META_FIELDS if self.embedded else frozenset())
        self.has_lists = self.list_type in ("set", "map") or any(c.has_lists for c in children)
        self.has_embedded = self.embedded or any(c.has_embedded for c in children)
        self.has_rules = bool(self.rules) or any(c.has_rules for c in children)

    @property
    def has_default(self) -> bool:
        return self.default is not _NO_DEFAULT

    def as_root(self) -> Structural:
        """A shallow clone flagged as an embedded resource (how the apiserver treats the root)."""
        if self.embedded:
            return self
        clone = object.__new__(Structural)
        for slot in Structural.__slots__:
            setattr(clone, slot, getattr(self, slot))
        clone.embedded = True
        clone.has_embedded = True
        clone.known = frozenset(self.properties) | META_FIELDS
        return clone


def _opt_int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value


# ------------------------------------------------------------------------ defaulting
def default(x: Any, s: Structural | None) -> None:
    """``structuraldefaulting.Default``: fill absent (and non-nullable null) fields."""
    if s is None or not s.has_defaults:
        return
    t = type(x)
    if t is dict:
        for k, prop in s.defaulted_props:
            if k not in x or (x[k] is None and not prop.nullable):
                x[k] = copy_tree(prop.default)
        addl = s.additional
        if addl is None:
            below = s.defaults_below
            if below:
                # each property is defaulted on its own (the order of siblings changes
                # nothing), so the shorter of the two key sets is walked
                if len(below) < len(x):
                    for k, node in below.items():
                        v = x.get(k, _NO_DEFAULT)
                        if v is not _NO_DEFAULT:
                            default(v, node)
                else:
                    get = below.get
                    for k, v in x.items():  # defaulting a value never adds keys to x
                        prop2 = get(k)
                        if prop2 is not None:
                            default(v, prop2)
            return
        props = s.properties
        for k in list(x):
            prop2 = props.get(k)
            if prop2 is not None:
                if prop2.has_defaults:
                    default(x[k], prop2)
            else:
                if x[k] is None and not addl.nullable and addl.default is not _NO_DEFAULT:
                    x[k] = copy_tree(addl.default)
                default(x[k], addl)
    elif t is list:
        items = s.items
        if items is None:
            return
        if items.default is _NO_DEFAULT or items.nullable:
            if items.has_defaults:
                for v in x:
                    default(v, items)
            return
        for i, v in enumerate(x):
            if v is None:
                x[i] = copy_tree(items.default)
            default(x[i], items)


# --------------------------------------------------------------------------- pruning
def prune(x: Any, s: Structural | None, path: str, out: list[str]) -> None:
    """``pruning.PruneWithOptions``: drop fields the schema does not specify."""
    if s is not None and s.preserve_unknown:
        _skip_prune(x, s, path, out)
        return
    t = type(x)
    if t is dict:
        if s is None:
            for k in list(x):
                out.append(f"{path}.{k}" if path else k)
                del x[k]
            return
        props = s.properties
        embedded = s.embedded
        if x.keys() <= s.known:
            # nothing to drop at this level (the common case): only containers below
            if _SCALARS.issuperset(map(type, x.values())):
                return
            for k, v in x.items():
                tv = type(v)
                if (tv is dict or tv is list) and not (embedded and k in META_FIELDS):
                    prune(v, props[k], f"{path}.{k}" if path else k, out)
            return
        for k in list(x):
            if embedded and k in META_FIELDS:
                continue
            prop = props.get(k)
            if prop is not None:
                v = x[k]
                if type(v) is dict or type(v) is list:
                    prune(v, prop, f"{path}.{k}" if path else k, out)
            elif s.additional_bool:
                v = x[k]
                if type(v) is dict or type(v) is list:
                    prune(v, s.additional, f"{path}.{k}" if path else k, out)
            else:
                if k not in META_FIELDS or path:
                    out.append(f"{path}.{k}" if path else k)
                del x[k]
    elif t is list:
        items = None if s is None else s.items
        for i, v in enumerate(x):
            if type(v) is dict or type(v) is list:
                prune(v, items, f"{path}[{i}]", out)


def _skip_prune(x: Any, s: Structural, path: str, out: list[str]) -> None:
    t = type(x)
    if t is dict:
        props = s.properties
        for k, v in x.items():
            if s.embedded and k in META_FIELDS:
                continue
            prop = props.get(k)
            if prop is not None:
                prune(v, prop, f"{path}.{k}" if path else k, out)
            elif s.additional_bool:
                prune(v, s.additional, f"{path}.{k}" if path else k, out)
    elif t is list:
        items = s.items
        if items is None:
            return
        for i, v in enumerate(x):
            _skip_prune(v, items, f"{path}[{i}]", out)


def coerce_meta(x: Any, s: Structural | None, path: str, out: list[str]) -> None:
    """``objectmeta.CoerceWithOptions`` (DropInvalidFields, ReturnUnknownFieldPaths).

    Inside every embedded resource (and at the root): ``apiVersion``/``kind`` that are
    not strings are dropped; ``metadata`` keeps only ObjectMeta's fields (the others
    are dropped and reported) and loses a null ``creationTimestamp``.
    """
    if s is None:
        return
    t = type(x)
    if t is dict:
        if s.embedded:
            for k in ("apiVersion", "kind"):
                if k in x and not isinstance(x[k], str):
                    del x[k]
            meta = x.get("metadata")
            if type(meta) is dict:
                if not meta.keys() <= OBJECT_META_FIELDS:
                    base = f"{path}.metadata" if path else "metadata"
                    for k in list(meta):
                        if k not in OBJECT_META_FIELDS:
                            out.append(f"{base}.{k}")
                            del meta[k]
                if "creationTimestamp" in meta and meta["creationTimestamp"] is None:
                    del meta["creationTimestamp"]
            elif "metadata" in x and meta is not None:
                del x["metadata"]
        below = s.embedded_below
        addl = s.additional
        if addl is not None and addl.has_embedded:
            props = s.properties
            for k, v in x.items():
                prop = props.get(k)
                if prop is not None:
                    if prop.has_embedded:
                        coerce_meta(v, prop, f"{path}.{k}" if path else k, out)
                else:
                    coerce_meta(v, addl, f"{path}.{k}" if path else k, out)
        elif below:
            get = below.get
            for k, v in x.items():
                prop = get(k)
                if prop is not None:
                    coerce_meta(v, prop, f"{path}.{k}" if path else k, out)
    elif t is list:
        items = s.items
        if items is None or not items.has_embedded:
            return
        for i, v in enumerate(x):
            coerce_meta(v, items, f"{path}[{i}]", out)


# ------------------------------------------------------------------- list-type checks
class _Unspecified:
    __slots__ = ()


_UNSPECIFIED: Final = _Unspecified()


def _child(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _key(path: str, key: str) -> str:
    return f"{path}[{key}]"


def validate_lists(x: Any, s: Structural | None, path: str, errs: list[FieldError]) -> None:
    """``listtype.ValidateListSetsAndMaps``: duplicates in set and map lists."""
    if s is None or not s.has_lists:
        return
    t = type(x)
    if t is dict:
        if s.additional is not None and s.additional.has_lists:
            for k, v in x.items():
                validate_lists(v, s.additional, _key(path, k), errs)
        below = s.lists_below
        if len(below) == 1:
            # one property with lists inside: looked up (its errors' order is the same)
            for k, node in below.items():
                v = x.get(k, _UNSPECIFIED)
                if v is not _UNSPECIFIED:
                    validate_lists(v, node, _child(path, k), errs)
        elif below:
            get = below.get
            for k, v in x.items():
                sub = get(k)
                if sub is not None:
                    validate_lists(v, sub, _child(path, k), errs)
    elif t is list:
        if s.list_type == "set":
            if len(x) > 1 and not _distinct_strings(x):
                for i in _non_unique(x):
                    errs.append(FieldError.duplicate(f"{path}[{i}]", x[i]))
        elif s.list_type == "map" and not _distinct_keys(x, s.list_map_keys):
            errs.extend(_validate_list_map(path, s, x))
        if s.items is not None and s.items.has_lists:
            for i, v in enumerate(x):
                validate_lists(v, s.items, f"{path}[{i}]", errs)


def _scalar_key(v: Any) -> Any:
    t = type(v)
    if t in (dict, list):
        return ("c", go_json(v))
    if t is float and v.is_integer():
        return ("f", v)
    return (t.__name__, v)


def _non_unique(values: list[Any]) -> list[int]:
    if len(values) <= 1:
        return []
    seen: dict[Any, int] = {}
    out: list[int] = []
    for i, v in enumerate(values):
        key = ("u",) if v is _UNSPECIFIED else _scalar_key(v)
        n = seen.get(key, 0)
        if n == 1:
            out.append(i)
        seen[key] = n + 1
    return out


def _distinct_strings(values: list[Any]) -> bool:
    """True when ``values`` are all strings and all different (so no duplicate to report)."""
    for v in values:
        if type(v) is not str:
            return False
    return len(set(values)) == len(values)


def _distinct_keys(items: list[Any], keys: list[str]) -> bool:
    """True when every item is an object whose one key field is a string, all different.

    Then ``_validate_list_map`` has nothing to report; anything else takes that path.
    """
    if len(keys) != 1:
        return False
    kf = keys[0]
    seen: set[str] = set()
    for item in items:
        if type(item) is not dict:
            return False
        k = item.get(kf)
        if type(k) is not str or k in seen:
            return False
        seen.add(k)
    return True


def _validate_list_map(path: str, s: Structural, x: list[Any]) -> list[FieldError]:
    for i, item in enumerate(x):
        if item is not None and type(item) is not dict:
            return [
                FieldError.invalid(
                    f"{path}[{i}]", item, "must be an object for an array of list-type map"
                )
            ]
    if len(x) <= 1:
        return []
    keys_fields = s.list_map_keys
    errs: list[FieldError] = []
    if len(keys_fields) == 1:
        kf = keys_fields[0]
        keys: list[Any] = [
            _UNSPECIFIED if item is None or kf not in item else item[kf] for item in x
        ]
        for i in _non_unique(keys):
            bad = {} if keys[i] is _UNSPECIFIED else {kf: keys[i]}
            errs.append(FieldError.duplicate(f"{path}[{i}]", bad))
        return errs
    composite: list[Any] = []
    for item in x:
        key: dict[str, Any] = {}
        if item is not None:
            for kf in keys_fields:
                if kf in item:
                    key[kf] = item[kf]
        composite.append(key)
    for i in _non_unique(composite):
        errs.append(FieldError.duplicate(f"{path}[{i}]", composite[i]))
    return errs


# ------------------------------------------------------------- embedded resource checks
_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?\Z")
_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?\Z")


def dns1035_label_errors(value: str) -> list[str]:
    """``validation.IsDNS1035Label`` messages."""
    errs: list[str] = []
    if len(value) > 63:
        errs.append("must be no more than 63 characters")
    if not _DNS1035.match(value):
        errs.append(
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start "
            "with an alphabetic character, and end with an alphanumeric character (e.g. "
            "'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
        )
    return errs


def validate_embedded(x: Any, s: Structural | None, path: str, errs: list[FieldError]) -> None:
    """``objectmeta.Validate`` for nested ``x-kubernetes-embedded-resource`` objects."""
    if s is None or not s.has_embedded:
        return
    t = type(x)
    if t is dict:
        if s.embedded:
            _validate_embedded_resource(x, path, errs)
        for k, v in x.items():
            prop = s.properties.get(k)
            if prop is not None:
                validate_embedded(v, prop, _child(path, k), errs)
            elif s.additional is not None:
                validate_embedded(v, s.additional, _key(path, k), errs)
    elif t is list:
        for i, v in enumerate(x):
            validate_embedded(v, s.items, f"{path}[{i}]", errs)


def _validate_embedded_resource(x: dict[str, Any], path: str, errs: list[FieldError]) -> None:
    if "apiVersion" not in x:
        errs.append(FieldError.required(_child(path, "apiVersion")))
    if "kind" not in x:
        errs.append(FieldError.required(_child(path, "kind")))
    for k, v in x.items():
        if k == "apiVersion":
            if not isinstance(v, str):
                errs.append(FieldError.invalid(_child(path, k), v, "must be a string"))
            elif not v:
                errs.append(FieldError.invalid(_child(path, k), v, "must not be empty"))
            else:
                try:
                    parse_api_version(v)
                except ValueError as exc:
                    errs.append(FieldError.invalid(_child(path, k), v, str(exc)))
        elif k == "kind":
            if not isinstance(v, str):
                errs.append(FieldError.invalid(_child(path, k), v, "must be a string"))
            elif not v:
                errs.append(FieldError.invalid(_child(path, k), v, "must not be empty"))
            else:
                le = dns1035_label_errors(v.lower())
                if le:
                    errs.append(
                        FieldError.invalid(
                            _child(path, k),
                            v,
                            "may have mixed case, but should otherwise match: " + ",".join(le),
                        )
                    )
        elif k == "metadata":
            if not isinstance(v, dict):
                continue
            mpath = _child(path, "metadata")
            name = v.get("name")
            if isinstance(name, str) and name:
                for msg in dns1123_subdomain_errors(name):
                    errs.append(FieldError.invalid(_child(mpath, "name"), name, msg))
            gen = v.get("generateName")
            if isinstance(gen, str) and gen:
                for msg in dns1123_subdomain_errors(_mask_trailing_dash(gen)):
                    errs.append(FieldError.invalid(_child(mpath, "generateName"), gen, msg))
            ns = v.get("namespace")
            if isinstance(ns, str) and ns:
                for msg in dns1123_label_errors(ns):
                    errs.append(FieldError.invalid(_child(mpath, "namespace"), ns, msg))


def _mask_trailing_dash(name: str) -> str:
    if len(name) > 1 and name.endswith("-"):
        return name[:-2] + "a"
    return name


_DNS1123_SUBDOMAIN = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z"
)


def dns1123_subdomain_errors(value: str) -> list[str]:
    """``validation.IsDNS1123Subdomain`` messages."""
    errs: list[str] = []
    if len(value) > 253:
        errs.append("must be no more than 253 characters")
    if not _DNS1123_SUBDOMAIN.match(value):
        errs.append(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
            "'-' or '.', and must start and end with an alphanumeric character (e.g. "
            "'example.com', regex used for validation is "
            "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
        )
    return errs


def dns1123_label_errors(value: str) -> list[str]:
    """``validation.IsDNS1123Label`` messages."""
    errs: list[str] = []
    if len(value) > 63:
        errs.append("must be no more than 63 characters")
    if not _DNS1123_LABEL.match(value):
        errs.append(
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters "
            "or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  "
            "or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
        )
    return errs
