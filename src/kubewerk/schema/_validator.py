"""OpenAPI value validation with kube-openapi's semantics and Kubernetes' messages.

One :class:`Validator` is compiled per schema node (including the nodes inside
``allOf``/``anyOf``/``oneOf``/``not``). ``validate`` walks a decoded JSON value once and
appends :class:`~kubewerk.core.errors.FieldError` objects exactly as the apiserver's
``kubeOpenAPIResultToFieldErrors`` converts kube-openapi's results:

* the field path is kube-openapi's dotted name (``spec.items[0].name``), or ``<nil>``
  for the root;
* the detail is kube-openapi's message (``spec.replicas in body should be less than or
  equal to 100``), with the cause type picked from the error code.

Every value a custom resource write carries goes through here, so each node also
builds a fast-accept predicate (``accepts``, the second half of this module): it
answers "no error" without building names or errors, and only where the detailed
checks would find nothing. The two halves stay in one module (over 1,000 lines) on
purpose: the predicate reads nearly all of a node's compiled state and probes its type
check, so it can only be kept exact beside the checks it stands in for; split apart,
one side would need the other's internals (an import circle) or a copy of them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

import orjson
import re2

from kubewerk.core.errors import FieldError
from kubewerk.core.gofmt import (
    INT64_MAX,
    INT64_MIN,
    go_deep_equal,
    go_float_v,
    go_json,
    go_quote,
    json_kind,
)

from . import formats
from ._ratchet import MISSING, correlate_items, correlate_key, unchanged
from ._regexp import go_regexp_error, go_regexp_tester

if TYPE_CHECKING:
    from ._structural import Structural

ROOT_FIELD: Final = "<nil>"
"""How ``field.Path(nil).String()`` prints: the field of errors about the whole object."""


def field_of(name: str) -> str:
    """kube-openapi name → field path as the apiserver reports it."""
    if not name or name == ".":
        return ROOT_FIELD
    return name[1:] if name[0] == "." else name


def _go_bad_value(value: Any) -> Any:
    """Integers beyond int64 reach Go as float64; print them that way."""
    if type(value) is int and not INT64_MIN <= value <= INT64_MAX:
        return float(value)
    return value


def _enum_matches(data: Any, options: list[Any]) -> bool:
    """basicCommonValidator: DeepEqual after Go's ``ConvertibleTo`` conversion."""
    if data is None:
        return False
    dk = json_kind(data)
    for opt in options:
        if opt is None:
            continue
        ok = json_kind(opt)
        if dk == ok or (dk in ("integer", "number") and ok in ("integer", "number")):
            if dk in ("integer", "number"):
                # enum values decode as float64; numbers convert to float64
                if float(data) == float(opt):
                    return True
            elif dk in ("object", "array"):
                if go_deep_equal(_float_nums(data), opt if ok != dk else _float_nums(opt)):
                    return True
            elif data == opt:
                return True
        elif dk == "integer" and ok == "string":
            # Go converts an integer to the string of that code point
            try:
                if chr(data) == opt:
                    return True
            except (ValueError, OverflowError):
                if opt == "\ufffd":
                    return True
    return False


def _float_nums(value: Any) -> Any:
    """Enum values decode with encoding/json: every number is a float64."""
    t = type(value)
    if t is int:
        return float(value)
    if t is dict:
        return {k: _float_nums(v) for k, v in value.items()}
    if t is list:
        return [_float_nums(v) for v in value]
    return value


def _enum_detail_values(options: list[Any]) -> list[str]:
    out: list[str] = []
    for v in options:
        out.append(v if isinstance(v, str) else go_json(v))
    return out


_TYPE_META: Final = frozenset({"apiVersion", "kind"})
"""Root fields never ratcheted: both objects are converted to the same version."""
_JUNCTOR_KEYS: Final = frozenset({"allOf", "anyOf", "oneOf", "not"})
_STRING_KEYS: Final = frozenset({"maxLength", "minLength", "pattern"})
_NUMBER_KEYS: Final = frozenset(
    {"maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum", "multipleOf"}
)
_ARRAY_KEYS: Final = frozenset({"minItems", "maxItems", "uniqueItems"})
_OBJECT_KEYS: Final = frozenset({"minProperties", "maxProperties"})


def _subs(raw: Any) -> list[Validator]:
    return [Validator(s) for s in raw if isinstance(s, dict)] if isinstance(raw, list) else []


class Validator:
    """kube-openapi's ``SchemaValidator`` for one schema node, compiled."""

    __slots__ = (
        "additional",
        "additional_allows",
        "all_of",
        "any_of",
        "enum",
        "enum_text",
        "exclusive_maximum",
        "exclusive_minimum",
        "fast_type",
        "format",
        "format_check",
        "has_junctors",
        "has_number",
        "has_object",
        "has_string",
        "items",
        "max_items",
        "max_length",
        "max_properties",
        "maximum",
        "min_items",
        "min_length",
        "min_properties",
        "minimum",
        "multiple_of",
        "not_",
        "nullable",
        "num_type",
        "ok_calls",
        "ok_fn",
        "ok_leaf",
        "one_of",
        "pattern",
        "pattern_error",
        "pattern_src",
        "properties",
        "required",
        "simple_types",
        "type_applies",
        "types",
        "types_text",
        "unique_items",
    )

    def __init__(self, schema: dict[str, Any]) -> None:
        # Keys a schema node does not have cost nothing below: each group of keywords is
        # only read when one of them is present (absent keys read as None, which never
        # raises, so the order of any exception is unchanged).
        keys = schema.keys()
        if schema.get("x-kubernetes-int-or-string") is True:
            types: tuple[str, ...] = ("integer", "string")
        elif isinstance(schema.get("type"), str) and schema["type"]:
            types = (schema["type"],)
        else:
            types = ()
        self.types = types
        self.types_text = ",".join(types)
        self.nullable = schema.get("nullable") is True
        raw_fmt = schema.get("format")
        fmt: str = raw_fmt if isinstance(raw_fmt, str) else ""
        check = formats.checker_for(fmt) if fmt else None
        self.format = fmt if check is not None else ""
        self.format_check = check
        self.type_applies = bool(types) or bool(self.format)
        # the one kind that passes the type check trivially (single type, no format)
        self.fast_type = types[0] if len(types) == 1 and not self.format else "-"

        if keys.isdisjoint(_JUNCTOR_KEYS):
            self.all_of = []
            self.any_of = []
            self.one_of = []
            self.not_ = None
            self.has_junctors = False
        else:
            self.all_of = _subs(schema.get("allOf"))
            self.any_of = _subs(schema.get("anyOf"))
            self.one_of = _subs(schema.get("oneOf"))
            self.not_ = Validator(schema["not"]) if isinstance(schema.get("not"), dict) else None
            self.has_junctors = bool(self.all_of or self.any_of or self.one_of or self.not_)

        self.pattern = None
        self.pattern_error = ""
        if keys.isdisjoint(_STRING_KEYS):
            self.max_length = None
            self.min_length = None
            self.pattern_src = ""
            self.has_string = False
        else:
            self.max_length = _int_or_none(schema.get("maxLength"))
            self.min_length = _int_or_none(schema.get("minLength"))
            pattern = schema.get("pattern")
            self.pattern_src = pattern if isinstance(pattern, str) and pattern else ""
            if self.pattern_src:
                try:
                    self.pattern = go_regexp_tester(self.pattern_src)
                except re2.error as err:
                    self.pattern_error = go_regexp_error(self.pattern_src, err)
            self.has_string = (
                self.max_length is not None or self.min_length is not None or bool(self.pattern_src)
            )

        self.num_type = types[0] if len(types) == 1 and types[0] in ("integer", "number") else ""
        if keys.isdisjoint(_NUMBER_KEYS):
            self.maximum = None
            self.exclusive_maximum = False
            self.minimum = None
            self.exclusive_minimum = False
            self.multiple_of = None
        else:
            self.maximum = _num_or_none(schema.get("maximum"))
            self.exclusive_maximum = schema.get("exclusiveMaximum") is True
            self.minimum = _num_or_none(schema.get("minimum"))
            self.exclusive_minimum = schema.get("exclusiveMinimum") is True
            self.multiple_of = _num_or_none(schema.get("multipleOf"))
        self.has_number = (
            self.maximum is not None
            or self.minimum is not None
            or self.multiple_of is not None
            or self.num_type == "integer"
        )

        items = schema.get("items")
        self.items = Validator(items) if isinstance(items, dict) else None
        if keys.isdisjoint(_ARRAY_KEYS):
            self.min_items = None
            self.max_items = None
            self.unique_items = False
        else:
            self.min_items = _int_or_none(schema.get("minItems"))
            self.max_items = _int_or_none(schema.get("maxItems"))
            self.unique_items = schema.get("uniqueItems") is True

        enum = schema.get("enum")
        self.enum = list(enum) if isinstance(enum, list) and enum else None
        self.enum_text = _enum_detail_values(self.enum) if self.enum else []

        props = schema.get("properties")
        self.properties: dict[str, Validator] = (
            {k: Validator(v) for k, v in props.items() if isinstance(v, dict)}
            if isinstance(props, dict)
            else {}
        )
        addl = schema.get("additionalProperties")
        self.additional = Validator(addl) if isinstance(addl, dict) else None
        self.additional_allows = addl is not False
        req = schema.get("required")
        self.required = [r for r in req if isinstance(r, str)] if isinstance(req, list) else []
        if keys.isdisjoint(_OBJECT_KEYS):
            self.min_properties = None
            self.max_properties = None
        else:
            self.min_properties = _int_or_none(schema.get("minProperties"))
            self.max_properties = _int_or_none(schema.get("maxProperties"))
        self.simple_types: tuple[str, ...] | None = (
            types if types and all(k in ("type", "description", "title") for k in schema) else None
        )
        self.has_object = bool(
            self.properties
            or self.additional is not None
            or not self.additional_allows
            or self.required
            or self.min_properties is not None
            or self.max_properties is not None
        )
        # the fast-accept predicate (see accepts): built on the second validation of
        # this node, so a validator used once (CRD default checks) never pays for it
        self.ok_fn: Callable[[Any], bool] | None = None
        self.ok_calls = 0
        # set with ok_fn: the one type ok_fn accepts, when it checks nothing else
        self.ok_leaf: type | None = None

    # ------------------------------------------------------------------ validate
    def accepts(self) -> Callable[[Any], bool]:
        """A predicate that is True only for values ``validate`` reports no error for.

        It may answer False for a valid value (unusual shapes: ``oneOf``, ``not``,
        ``multipleOf``, integral floats, …); ``validate`` then runs the detailed checks,
        which alone decide the errors. Built once per node, then cached.
        """
        fn = self.ok_fn
        if fn is None:
            fn = self.ok_fn = _build_accepts(self)
        return fn

    def validate(self, data: Any, name: str, errs: list[FieldError]) -> None:
        """Append the errors kube-openapi reports for ``data`` at kube-openapi ``name``."""
        ok = self.ok_fn
        if ok is None:
            self.ok_calls += 1
            if self.ok_calls > 1:
                ok = self.accepts()
        if ok is not None and ok(data):
            return
        self._validate(data, name, errs)

    def validate_update(
        self, node: Structural | None, data: Any, old: Any, name: str, errs: list[FieldError]
    ) -> None:
        """``validate`` with validation ratcheting: ``old`` is the correlated old value.

        Kubernetes' ``ratchetingValueValidator``: the node's errors (its own and those
        of its uncorrelated descendants) are dropped when the node is unchanged from
        ``old`` (``unchanged``); correlated children ratchet on their own. ``node`` is
        the structural schema of this node, which decides how children correlate.
        """
        ok = self.ok_fn
        if ok is None:
            self.ok_calls += 1
            if self.ok_calls > 1:
                ok = self.accepts()
        if ok is not None and ok(data):
            return
        # the apiserver validates, then drops the node's errors if it is unchanged;
        # comparing first gives the same answer without validating unchanged data
        if unchanged(node, data, old):
            return
        self._validate(data, name, errs, node, old)

    def _validate(
        self,
        data: Any,
        name: str,
        errs: list[FieldError],
        node: Structural | None = None,
        old: Any = MISSING,
    ) -> None:
        """``node``/``old``: ratchet the children against ``old`` (see ``validate_update``)."""
        if data is None:
            if self.types and not self.nullable and "null" not in self.types:
                errs.append(
                    FieldError.type_invalid(
                        field_of(name), "null", _type_msg(name, self.types_text, "null")
                    )
                )
            if self.enum is not None:
                errs.append(FieldError.not_supported(field_of(name), None, self.enum_text))
            return

        kind = json_kind(data)
        if self.type_applies and kind != self.fast_type:
            self._check_type(data, kind, name, errs)
        if self.has_junctors:
            self._check_junctors(data, name, errs)
        if kind == "string":
            if self.has_string:
                self._check_string(data, name, errs)
            if self.format_check is not None and not self.format_check(data):
                errs.append(
                    FieldError.type_invalid(
                        field_of(name), data, _type_msg(name, self.format, data)
                    )
                )
        elif kind in ("integer", "number"):
            if self.has_number:
                self._check_number(data, kind, name, errs)
        elif kind == "array":
            items = self.items
            if items is not None:
                olds = correlate_items(node, data, old) if old is not MISSING else None
                if olds is None:
                    for i, item in enumerate(data):
                        items.validate(item, f"{name}[{i}]", errs)
                else:
                    item_node = node.items if node is not None else None
                    for i, item in enumerate(data):
                        o = olds[i]
                        if o is MISSING:
                            items.validate(item, f"{name}[{i}]", errs)
                        else:
                            items.validate_update(item_node, item, o, f"{name}[{i}]", errs)
            if self.min_items is not None and len(data) < self.min_items:
                errs.append(
                    FieldError.invalid(
                        field_of(name),
                        len(data),
                        f"{name} in body should have at least {self.min_items} items",
                    )
                )
            if self.max_items is not None and len(data) > self.max_items:
                errs.append(FieldError.too_many(field_of(name), len(data), self.max_items))
            if self.unique_items and _has_duplicates(data):
                errs.append(
                    FieldError.invalid(
                        field_of(name), "", f"{name} in body shouldn't contain duplicates"
                    )
                )
        if self.enum is not None and not _enum_matches(data, self.enum):
            errs.append(
                FieldError.not_supported(field_of(name), _go_bad_value(data), self.enum_text)
            )
        if kind == "object" and self.has_object:
            if old is MISSING or type(old) is not dict or node is None:
                self._check_object(data, name, errs)
            else:
                self._check_object_update(data, name, errs, node, old)

    def _check_type(self, data: Any, kind: str, name: str, errs: list[FieldError]) -> None:
        types = self.types
        fmt = self.format
        is_float_int = kind == "number" and "integer" in types and _integral(data)
        is_int_float = kind == "integer" and "number" in types
        if kind != "string" and kind != "array" and fmt:
            data_format = "int64" if kind == "integer" else "double" if kind == "number" else ""
            if not (kind in types or data_format == fmt or is_float_int or is_int_float):
                errs.append(
                    FieldError.type_invalid(
                        field_of(name), data_format, _type_msg(name, fmt, data_format)
                    )
                )
                return
        if fmt and "number" not in types and "integer" not in types and kind in ("string", "array"):
            return
        if not (kind in types or is_float_int or is_int_float):
            errs.append(
                FieldError.type_invalid(
                    field_of(name), kind, _type_msg(name, self.types_text, kind)
                )
            )

    def _check_string(self, data: str, name: str, errs: list[FieldError]) -> None:
        if self.max_length is not None and len(data) > self.max_length:
            errs.append(FieldError.too_long(field_of(name), self.max_length))
            return
        if self.min_length is not None and len(data) < self.min_length:
            errs.append(
                FieldError.invalid(
                    field_of(name),
                    data,
                    f"{name} in body should be at least {self.min_length} chars long",
                )
            )
            return
        if self.pattern_src:
            if self.pattern is None:
                errs.append(
                    FieldError.invalid(
                        field_of(name),
                        data,
                        f"{name} in body should match '{self.pattern_src}, but pattern is invalid: "
                        f"{self.pattern_error}'",
                    )
                )
            elif not self.pattern(data):
                errs.append(
                    FieldError.invalid(
                        field_of(name), data, f"{name} in body should match '{self.pattern_src}'"
                    )
                )

    def _check_number(self, data: Any, kind: str, name: str, errs: list[FieldError]) -> None:
        field = field_of(name)
        is_int = kind == "integer"
        if self.num_type == "integer" and not _fits_int64(data):
            errs.append(
                FieldError.invalid(
                    ROOT_FIELD,
                    "",
                    f"Checked value must be of type integer (default format) in {name}",
                )
            )
        bad = _go_bad_value(data)
        mult = self.multiple_of
        if mult is not None:
            native = self.num_type != "integer" or _fits_int64(mult)
            if not native:
                errs.append(
                    FieldError.invalid(
                        ROOT_FIELD,
                        "",
                        f"MultipleOf value must be of type integer (default format) in {name}",
                    )
                )
            if is_int and native:
                factor = int(mult)
                if factor <= 0:
                    errs.append(
                        FieldError.invalid(
                            field,
                            factor,
                            f"factor MultipleOf declared for {name} must be positive: {factor}",
                        )
                    )
                elif data % factor != 0:
                    errs.append(
                        FieldError.invalid(
                            field, bad, f"{name} in body should be a multiple of {factor}"
                        )
                    )
            else:
                fdata = float(data)
                if mult <= 0:
                    errs.append(
                        FieldError.invalid(
                            field,
                            float(mult),
                            f"factor MultipleOf declared for {name} must "
                            f"be positive: {go_float_v(float(mult))}",
                        )
                    )
                else:
                    q = (1 / mult * fdata) if mult < 1 else (fdata / mult)
                    if not _integral(q):
                        errs.append(
                            FieldError.invalid(
                                field,
                                bad,
                                f"{name} in body should be a multiple of {go_float_v(float(mult))}",
                            )
                        )
        if self.minimum is not None:
            self._bound(data, is_int, self.minimum, self.exclusive_minimum, False, name, errs)
        if self.maximum is not None:
            self._bound(data, is_int, self.maximum, self.exclusive_maximum, True, name, errs)

    def _bound(
        self,
        data: Any,
        is_int: bool,
        limit: float,
        exclusive: bool,
        upper: bool,
        name: str,
        errs: list[FieldError],
    ) -> None:
        native = self.num_type != "integer" or _fits_int64(limit)
        word = "Maximum boundary" if upper else "Minimum boundary"
        if not native:
            errs.append(
                FieldError.invalid(
                    ROOT_FIELD,
                    "",
                    f"{word} value must be of type integer (default format) in {name}",
                )
            )
        if is_int and native:
            lim: Any = int(limit)
            shown = str(lim)
            value: Any = data
        else:
            lim = float(limit)
            shown = go_float_v(lim)
            value = float(data)
        if upper:
            failed = value >= lim if exclusive else value > lim
            rel = "less than" if exclusive else "less than or equal to"
        else:
            failed = value <= lim if exclusive else value < lim
            rel = "greater than" if exclusive else "greater than or equal to"
        if failed:
            errs.append(
                FieldError.invalid(
                    field_of(name), _go_bad_value(data), f"{name} in body should be {rel} {shown}"
                )
            )

    def _check_property_count(
        self, data: dict[str, Any], name: str, errs: list[FieldError]
    ) -> None:
        """``minProperties`` / ``maxProperties``."""
        n = len(data)
        if self.min_properties is not None and n < self.min_properties:
            errs.append(
                FieldError.invalid(
                    field_of(name),
                    n,
                    f"{name} in body should have at least {self.min_properties} properties",
                )
            )
        if self.max_properties is not None and n > self.max_properties:
            errs.append(FieldError.too_many(field_of(name), n, self.max_properties))

    def _check_forbidden(self, data: dict[str, Any], name: str, errs: list[FieldError]) -> None:
        """additionalProperties false: every key that is not a property is an error."""
        props = self.properties
        for key in data:
            if key not in props:
                errs.append(
                    FieldError.invalid(
                        field_of(name), key, f"{name}.{key} in body is a forbidden property"
                    )
                )

    def _check_required(self, data: dict[str, Any], name: str, errs: list[FieldError]) -> None:
        for key in self.required:
            if key not in data:
                errs.append(FieldError.required(field_of(f"{name}.{key}")))

    def _check_object(self, data: dict[str, Any], name: str, errs: list[FieldError]) -> None:
        self._check_property_count(data, name, errs)
        props = self.properties
        if not self.additional_allows:
            self._check_forbidden(data, name, errs)
        elif self.additional is not None:
            addl = self.additional
            for key, value in data.items():
                if key not in props:
                    addl.validate(value, f"{name}.{key}", errs)
        if props:
            prefix = name + "." if name else ""
            for key, value in data.items():
                sub = props.get(key)
                if sub is not None:
                    sub.validate(value, prefix + key, errs)
        self._check_required(data, name, errs)

    def _check_object_update(
        self,
        data: dict[str, Any],
        name: str,
        errs: list[FieldError],
        node: Structural,
        old: dict[str, Any],
    ) -> None:
        """``_check_object`` with properties and map values ratcheted against ``old``."""
        self._check_property_count(data, name, errs)
        props = self.properties
        root = not name
        if not self.additional_allows:
            self._check_forbidden(data, name, errs)
        elif self.additional is not None:
            addl = self.additional
            for key, value in data.items():
                if key not in props:
                    o = correlate_key(node, data, old, key)
                    if o is MISSING or (root and key in _TYPE_META):
                        addl.validate(value, f"{name}.{key}", errs)
                    else:
                        addl.validate_update(node.additional, value, o, f"{name}.{key}", errs)
        if props:
            prefix = name + "." if name else ""
            sprops = node.properties
            for key, value in data.items():
                sub = props.get(key)
                if sub is not None:
                    o = correlate_key(node, data, old, key)
                    if o is MISSING or (root and key in _TYPE_META):
                        sub.validate(value, prefix + key, errs)
                    else:
                        sub.validate_update(sprops.get(key), value, o, prefix + key, errs)
        self._check_required(data, name, errs)

    def _check_junctors(self, data: Any, name: str, errs: list[FieldError]) -> None:
        if self.any_of:
            best: list[FieldError] | None = None
            best_count = -1
            # a branch that only names types decides without building messages
            ok = any(
                sub.simple_types is not None and _kind_in(data, sub.simple_types)
                for sub in self.any_of
            )
            for sub in () if ok else self.any_of:
                sub_errs: list[FieldError] = []
                sub.validate(data, name, sub_errs)
                if not sub_errs:
                    ok = True
                    break
                count = sub.match_count(data)
                if best is None or count > best_count:
                    best, best_count = sub_errs, count
            if not ok:
                errs.append(
                    FieldError.invalid(
                        ROOT_FIELD,
                        "",
                        f"{go_quote(name)} must validate at least one schema (anyOf)",
                    )
                )
                if best:
                    errs.extend(best)
        if self.one_of:
            valid = 0
            best = None
            best_count = -1
            for sub in self.one_of:
                sub_errs = []
                if sub.simple_types is None or not _kind_in(data, sub.simple_types):
                    sub.validate(data, name, sub_errs)
                if not sub_errs:
                    valid += 1
                    best = None
                    continue
                count = sub.match_count(data)
                if valid == 0 and (best is None or count > best_count):
                    best, best_count = sub_errs, count
            if valid != 1:
                extra = "Found none valid" if valid == 0 else f"Found {valid} valid alternatives"
                errs.append(
                    FieldError.invalid(
                        ROOT_FIELD,
                        "",
                        f"{go_quote(name)} must validate one and only one schema (oneOf). {extra}",
                    )
                )
                if best:
                    errs.extend(best)
        if self.all_of:
            validated = 0
            for sub in self.all_of:
                before = len(errs)
                sub.validate(data, name, errs)
                if len(errs) == before:
                    validated += 1
            if validated != len(self.all_of):
                extra = ". None validated" if validated == 0 else ""
                errs.append(
                    FieldError.invalid(
                        ROOT_FIELD,
                        "",
                        f"{go_quote(name)} must validate all the schemas (allOf){extra}",
                    )
                )
        if self.not_ is not None:
            sub_errs = []
            self.not_.validate(data, name, sub_errs)
            if not sub_errs:
                errs.append(
                    FieldError.invalid(
                        ROOT_FIELD, "", f"{go_quote(name)} must not validate the schema (not)"
                    )
                )

    def match_count(self, data: Any) -> int:
        """How many checks applied to ``data`` (kube-openapi's ``MatchCount``, approximately)."""
        count = 1
        if data is None:
            return count
        kind = json_kind(data)
        if self.type_applies:
            count += 1
        if kind == "array" and self.items is not None:
            for item in data:
                count += self.items.match_count(item)
        elif kind == "object":
            for key, sub in self.properties.items():
                if key in data:
                    count += sub.match_count(data[key])
        return count


def _kind_in(data: Any, types: tuple[str, ...]) -> bool:
    """Would kube-openapi's type check accept ``data`` for ``types`` (no format)?"""
    kind = json_kind(data)
    if kind in types:
        return True
    if kind == "number" and "integer" in types and _integral(data):
        return True
    return kind == "integer" and "number" in types


def _type_msg(name: str, type_name: str, value: Any) -> str:
    if isinstance(value, str):
        return f"{name} in body must be of type {type_name}: {go_quote(value)}"
    return f"{name} in body must be of type {type_name}"


def _int_or_none(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value == int(value):
        return int(value)
    return None


def _num_or_none(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _integral(value: Any) -> bool:
    """``swag.IsFloat64AJSONInteger``."""
    if isinstance(value, int):
        return True
    if math.isnan(value) or math.isinf(value):
        return False
    return (float(value) == math.trunc(value) and abs(value) < 2**53) or float(value).is_integer()


def _fits_int64(value: Any) -> bool:
    if isinstance(value, int):
        return INT64_MIN <= value <= INT64_MAX
    if math.isnan(value) or math.isinf(value) or not float(value).is_integer():
        return False
    return bool(-(2.0**63) <= value < 2.0**63)


def _has_duplicates(data: list[Any]) -> bool:
    for i, a in enumerate(data):
        for b in data[:i]:
            if go_deep_equal(a, b):
                return True
    return False


Accept = Callable[[Any], bool]


# ------------------------------------------------------------------- fast accept
# Each schema node gets a closure that answers "does validate() report nothing for this
# value?" without building field names or errors. It only ever answers True when the
# detailed checks above find nothing; anything it does not model exactly answers False
# and falls back to them. Values come from JSON decoders, so exact type tests suffice
# (a subclass answers False and takes the detailed path).
_SAMPLES: Final[dict[str, Any]] = {
    "string": "",
    "integer": 0,
    "number": 0.5,  # non-integral: if it passes the type check, every float does
    "boolean": False,
    "array": [],
    "object": {},
}


def _never(_: Any) -> bool:
    return False


def _always(_: Any) -> bool:
    return True


def _type_passes(v: Validator, kind: str) -> bool:
    """Does kube-openapi's type check accept every value of ``kind`` for this node?"""
    if not v.type_applies or kind == v.fast_type:
        return True
    probe: list[FieldError] = []
    v._check_type(_SAMPLES[kind], kind, "", probe)
    return not probe


def _bound_ok(limit: float, exclusive: bool, upper: bool, as_int: bool) -> Accept:
    lim: Any = int(limit) if as_int else float(limit)
    if upper:
        if exclusive:
            return lambda d: bool(d < lim)
        return lambda d: bool(d <= lim)
    if exclusive:
        return lambda d: bool(d > lim)
    return lambda d: bool(d >= lim)


def _numeric_accept(v: Validator, as_int: bool) -> Accept | None:
    """The number checks for an int64 (``as_int``) or a float value, or None (fall back)."""
    if not v.has_number:
        return _always
    if v.multiple_of is not None:
        return None
    if v.num_type == "integer" and not as_int:
        return None  # an integral float: _fits_int64 and friends, rare
    checks: list[Accept] = []
    for limit, exclusive, upper in (
        (v.minimum, v.exclusive_minimum, False),
        (v.maximum, v.exclusive_maximum, True),
    ):
        if limit is None:
            continue
        if v.num_type == "integer" and not _fits_int64(limit):
            return None  # always an error
        checks.append(_bound_ok(limit, exclusive, upper, as_int))
    if not checks:
        return _always
    if len(checks) == 1:
        return checks[0]
    first, second = checks
    return lambda d: first(d) and second(d)


def _string_accept(v: Validator, none_ok: bool) -> Accept | None:
    """Strings: length bounds, pattern, format, string enum; the closure checks the type."""
    if v.pattern_src and v.pattern is None:
        return None
    max_len, min_len = v.max_length, v.min_length
    pattern = v.pattern if v.pattern_src else None
    fmt = v.format_check
    enum = frozenset(o for o in v.enum if type(o) is str) if v.enum is not None else None
    lo = min_len if min_len is not None else 0
    hi = max_len if max_len is not None else -1

    def string_ok(d: Any) -> bool:
        if type(d) is not str:
            return none_ok and d is None
        n = len(d)
        if n < lo or (hi >= 0 and n > hi):
            return False
        if pattern is not None and not pattern(d):
            return False
        if fmt is not None and not fmt(d):
            return False
        return enum is None or d in enum

    if enum is not None and max_len is None and min_len is None and pattern is None and fmt is None:
        contains = enum.__contains__

        def enum_ok(d: Any) -> bool:
            if type(d) is not str:
                return none_ok and d is None
            return contains(d)

        return enum_ok
    return string_ok


def _array_accept(v: Validator, none_ok: bool) -> Accept | None:
    """Arrays: item count bounds and items; the closure checks the type."""
    if v.unique_items or v.enum is not None:
        return None
    lo = v.min_items if v.min_items is not None else 0
    hi = v.max_items if v.max_items is not None else -1
    items = v.items
    item_ok = items.accepts() if items is not None else _always
    leaf = items.ok_leaf if items is not None else None

    if leaf is not None and lo == 0 and hi < 0:

        def leaf_array_ok(d: Any) -> bool:
            if type(d) is not list:
                return none_ok and d is None
            for x in d:  # noqa: SIM110 (a plain loop is faster here)
                if type(x) is not leaf:
                    return False
            return True

        return leaf_array_ok

    def array_ok(d: Any) -> bool:
        if type(d) is not list:
            return none_ok and d is None
        n = len(d)
        if n < lo or (hi >= 0 and n > hi):
            return False
        for x in d:  # noqa: SIM110 (a plain loop is faster here)
            if not item_ok(x):
                return False
        return True

    return array_ok


def _object_accept(v: Validator, none_ok: bool) -> Accept | None:
    """Objects: property count bounds, properties, additionalProperties, required."""
    if v.enum is not None:
        return None
    allows = v.additional_allows
    addl_v = v.additional
    addl = addl_v.accepts() if addl_v is not None else None
    addl_leaf = addl_v.ok_leaf if addl_v is not None else None
    required = tuple(v.required)
    lo = v.min_properties if v.min_properties is not None else 0
    hi = v.max_properties if v.max_properties is not None else -1
    leaves: dict[str, type] = {}
    funcs: dict[str, Accept] = {}
    for key, sub in v.properties.items():
        fn = sub.accepts()
        if sub.ok_leaf is not None:
            leaves[key] = sub.ok_leaf
        else:
            funcs[key] = fn
    leaf_get = leaves.get
    get = funcs.get

    if not v.properties and addl is not None and allows and lo == 0 and hi < 0 and not required:
        if addl_leaf is not None:

            def leaf_map_ok(d: Any) -> bool:
                if type(d) is not dict:
                    return none_ok and d is None
                for x in d.values():  # noqa: SIM110 (a plain loop is faster here)
                    if type(x) is not addl_leaf:
                        return False
                return True

            return leaf_map_ok

        def map_ok(d: Any) -> bool:
            if type(d) is not dict:
                return none_ok and d is None
            for x in d.values():  # noqa: SIM110 (a plain loop is faster here)
                if not addl(x):
                    return False
            return True

        return map_ok

    if allows and addl is None and lo == 0 and hi < 0:

        def props_ok(d: Any) -> bool:
            if type(d) is not dict:
                return none_ok and d is None
            for key, x in d.items():
                t = leaf_get(key)
                if t is not None:
                    if type(x) is not t:
                        return False
                else:
                    f = get(key)
                    if f is not None and not f(x):
                        return False
            for key in required:  # noqa: SIM110 (a plain loop is faster here)
                if key not in d:
                    return False
            return True

        return _remembered(props_ok) if _flat_object(v) else props_ok

    def object_ok(d: Any) -> bool:
        if type(d) is not dict:
            return none_ok and d is None
        n = len(d)
        if n < lo or (hi >= 0 and n > hi):
            return False
        for key, x in d.items():
            t = leaf_get(key)
            if t is not None:
                if type(x) is not t:
                    return False
                continue
            f = get(key)
            if f is not None:
                if not f(x):
                    return False
            elif not allows or (addl is not None and not addl(x)):
                return False
        for key in required:  # noqa: SIM110 (a plain loop is faster here)
            if key not in d:
                return False
        return True

    return _remembered(object_ok) if _flat_object(v) else object_ok


_SCALAR_TYPES: Final = frozenset(("string", "integer", "boolean", "number"))
_TEXT_KEYED: Final = frozenset((str, int, bool, type(None)))
_MEMO_SIZE: Final = 1024
_MEMO_TEXT_MAX: Final = 1024
_MEMO_TRIAL: Final = 256


def _flat_object(v: Validator) -> bool:
    """An object node of at least three properties, each a scalar type: where checking
    a value costs more than looking its text up (a spec of settings)."""
    props = v.properties
    return len(props) >= 3 and all(
        sub.types and _SCALAR_TYPES.issuperset(sub.types) for sub in props.values()
    )


def _remembered(check: Accept) -> Accept:
    """``check``, answered from the JSON text of the objects it accepted before.

    Only objects whose values are strings, integers, booleans and nulls are looked up:
    equal texts are then equal objects (names, order, types and values; floats are left
    out, as orjson writes NaN and infinities as ``null``), and ``check`` (types, bounds,
    patterns, formats, enums) is a function of the object alone. At most ``_MEMO_SIZE``
    texts of at most ``_MEMO_TEXT_MAX`` bytes are kept (emptied when full); when fewer
    than a quarter of the first ``_MEMO_TRIAL`` lookups are found (objects that differ
    every time), the node stops remembering and checks every value.
    """
    seen: dict[bytes, bool] = {}
    counts = [0, 0]  # lookups, found
    dumps = orjson.dumps
    encode_error = orjson.JSONEncodeError
    scalar = _TEXT_KEYED.issuperset

    def remembered(d: Any) -> bool:
        lookups = counts[0]
        if lookups >= _MEMO_TRIAL and counts[1] * 4 < lookups:
            return check(d)  # not worth it for this node's values
        if type(d) is not dict or not scalar(map(type, d.values())):
            return check(d)
        try:
            text = dumps(d)
        except encode_error:  # a non-string key, an integer beyond 64 bits, a surrogate
            return check(d)
        if lookups < _MEMO_TRIAL:
            counts[0] = lookups + 1
        if text in seen:
            if lookups < _MEMO_TRIAL:
                counts[1] += 1
            return True
        ok = check(d)
        if ok and len(text) <= _MEMO_TEXT_MAX:
            if len(seen) >= _MEMO_SIZE:
                seen.clear()
            seen[text] = True
        return ok

    return remembered


def _build_accepts(v: Validator) -> Accept:
    if v.one_of or v.not_ is not None:
        return _never
    none_ok = v.enum is None and not (v.types and not v.nullable and "null" not in v.types)
    # handlers per Python type; each closure also accepts only its own type (and null
    # when none_ok), so a node that admits one type uses its handler directly
    handlers: dict[type, Accept] = {}
    plain: set[type] = set()  # types accepted with no further check
    if _type_passes(v, "string"):
        if (
            v.enum is None
            and v.max_length is None
            and v.min_length is None
            and not v.pattern_src
            and v.format_check is None
        ):
            plain.add(str)
        else:
            h = _string_accept(v, none_ok)
            if h is not None:
                handlers[str] = h
    if v.enum is None:
        if _type_passes(v, "boolean"):
            plain.add(bool)
        if _type_passes(v, "integer"):
            h = _numeric_accept(v, True)
            if h is _always:
                plain.add(int)
            elif h is not None:
                handlers[int] = h
        if _type_passes(v, "number"):
            h = _numeric_accept(v, False)
            if h is _always:
                plain.add(float)
            elif h is not None:
                handlers[float] = h
    if _type_passes(v, "array"):
        if (
            v.enum is None
            and not v.unique_items
            and v.items is None
            and v.min_items is None
            and v.max_items is None
        ):
            plain.add(list)
        else:
            h = _array_accept(v, none_ok)
            if h is not None:
                handlers[list] = h
    if _type_passes(v, "object"):
        if v.enum is None and not v.has_object:
            plain.add(dict)
        else:
            h = _object_accept(v, none_ok)
            if h is not None:
                handlers[dict] = h
    if int in plain:
        # integers beyond int64 are "number" to kube-openapi
        plain.discard(int)
        if float in plain or float in handlers:
            handlers[int] = _always if float in plain else handlers[float]
        else:
            handlers[int] = _int64
    if int in handlers and handlers[int] is not _always and handlers[int] is not _int64:
        num = handlers[int]

        def int_ok(d: Any) -> bool:
            return INT64_MIN <= d <= INT64_MAX and bool(num(d))

        handlers[int] = int_ok
    base = _dispatch(v, handlers, plain, none_ok)
    subs_all = tuple(s.accepts() for s in v.all_of)
    subs_any = tuple(s.accepts() for s in v.any_of)
    if not subs_all and not subs_any:
        return base
    v.ok_leaf = None

    def junctors_ok(d: Any) -> bool:
        if not base(d):
            return False
        if d is None:
            return True  # junctors do not apply to null
        for f in subs_all:
            if not f(d):
                return False
        if subs_any:
            for f in subs_any:  # noqa: SIM110 (a plain loop is faster here)
                if f(d):
                    return True
            return False
        return True

    return junctors_ok


def _int64(d: Any) -> bool:
    return bool(INT64_MIN <= d <= INT64_MAX)


def _dispatch(
    v: Validator, handlers: dict[type, Accept], plain: set[type], none_ok: bool
) -> Accept:
    """One predicate over value types; types without a handler answer False."""
    if not handlers and not plain:
        return _none_only if none_ok else _never
    if not handlers and len(plain) == 1:
        (t,) = plain
        if none_ok:
            return lambda d: type(d) is t or d is None
        v.ok_leaf = t
        return lambda d: type(d) is t
    if not plain and len(handlers) == 1:
        ((t, h),) = handlers.items()
        if t in (str, list, dict):
            return h  # checks its own type and null
        if none_ok:
            return lambda d: h(d) if type(d) is t else d is None
        return lambda d: type(d) is t and h(d)
    table = dict(handlers)
    for t in plain:
        table[t] = _always
    if none_ok:
        table[type(None)] = _always
    get = table.get

    def dispatch(d: Any) -> bool:
        h = get(type(d))
        return h is not None and h(d)

    return dispatch


def _none_only(d: Any) -> bool:
    return d is None
