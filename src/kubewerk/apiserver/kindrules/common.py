"""Helpers shared by the kinds' rules: JSON accessors and the validators of
``pkg/apis/core/validation`` and ``k8s.io/apimachinery`` that many kinds call.

Every ``check_*`` function appends the errors it finds to ``errs`` (kube's
``allErrs = append(allErrs, ...)``) in the order kube-apiserver reports them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from kubewerk.core.errors import FieldError
from kubewerk.core.gofmt import GoText, go_json
from kubewerk.core.selectors import regex_error
from kubewerk.core.validation import (
    is_dns1123_label,
    is_dns1123_subdomain,
    is_qualified_name,
    validate_labels,
)

JSON = dict[str, Any]
Errs = list[FieldError]

MAPPING: Final = (dict, Mapping)
"""``isinstance(x, MAPPING)`` is ``isinstance(x, Mapping)``, answered without the ABC
machinery for the dicts a decoded body holds."""

IMMUTABLE: Final = "field is immutable"
"""``apimachineryvalidation.FieldImmutableErrorMsg``."""
NON_NEGATIVE: Final = "must be greater than or equal to 0"
"""``isNegativeErrorMsg``."""
NOT_POSITIVE: Final = "must be greater than zero"
"""``isNotPositiveErrorMsg``."""
PORT_RANGE: Final = "must be between 1 and 65535, inclusive"
PROTOCOLS: Final = ("SCTP", "TCP", "UDP")
"""``supportedPortProtocols`` as ``sets.List`` prints them (sorted)."""


@dataclass(frozen=True)
class KindRules:
    """What one kind in one apiVersion contributes to the tables."""

    defaulter: Callable[[JSON], None] | None = None
    validator: Callable[[JSON, JSON | None], list[FieldError]] | None = None
    status_validator: Callable[[JSON, JSON | None], list[FieldError]] | None = None


# -- JSON accessors (tolerant: a typed decode already checked the types) -------


def obj(parent: Mapping[str, Any] | None, key: str) -> JSON:
    """``parent[key]`` when it is an object, else an empty dict (not attached)."""
    if not isinstance(parent, MAPPING):
        return {}
    value = parent.get(key)
    return value if isinstance(value, dict) else {}


def ensure(parent: JSON, key: str) -> JSON:
    """``parent[key]``, created as ``{}`` when missing or null."""
    value = parent.get(key)
    if not isinstance(value, dict):
        value = {}
        parent[key] = value
    return value


def items(parent: Mapping[str, Any] | None, key: str) -> list[JSON]:
    """The objects in the list ``parent[key]`` (non-objects skipped)."""
    if not isinstance(parent, MAPPING):
        return []
    value = parent.get(key)
    if not isinstance(value, list):
        return []
    return [v for v in value if isinstance(v, dict)]


def str_of(parent: Mapping[str, Any] | None, key: str) -> str:
    """``parent[key]`` as Go would hold it in a string field ("" when absent)."""
    if not isinstance(parent, MAPPING):
        return ""
    value = parent.get(key)
    return value if isinstance(value, str) else ""


def int_of(parent: Mapping[str, Any] | None, key: str, default: int = 0) -> int:
    """``parent[key]`` as an integer field (``default`` when absent)."""
    if not isinstance(parent, MAPPING):
        return default
    value = parent.get(key)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return default


def str_map(value: Any) -> dict[str, str] | None:
    """``value`` when it is a map of strings to strings (what a typed decode leaves in a
    ``map[string]string`` field), else None."""
    if isinstance(value, dict) and all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        return value
    return None


def set_default(parent: JSON, key: str, value: Any) -> None:
    """Set ``parent[key] = value`` when the field is unset (absent or null)."""
    if parent.get(key) is None:
        parent[key] = value


def struct_value(value: Any, order: Sequence[str]) -> GoText:
    """A bad value that kube prints as ``json.Marshal`` of a Go struct: fields in the
    struct's declaration order (``order``), not sorted."""
    if not isinstance(value, MAPPING):
        return GoText(go_json(value))
    keys = [k for k in order if k in value] + sorted(k for k in value if k not in order)
    inner = ",".join(f"{go_json(k)}:{go_json(value[k])}" for k in keys)
    return GoText("{" + inner + "}")


SELECTOR_ORDER: Final = ("matchLabels", "matchExpressions")


def selector_value(selector: Any) -> GoText:
    """A ``LabelSelector`` as kube prints it in an error."""
    if not isinstance(selector, MAPPING):
        return GoText(go_json(selector))
    value: dict[str, Any] = dict(selector)
    exprs = value.get("matchExpressions")
    shown = (
        "[" + ",".join(struct_value(e, ("key", "operator", "values")).text for e in exprs) + "]"
        if isinstance(exprs, list)
        else None
    )
    parts = []
    if "matchLabels" in value:
        parts.append(f'"matchLabels":{go_json(value["matchLabels"])}')
    if shown is not None:
        parts.append(f'"matchExpressions":{shown}')
    return GoText("{" + ",".join(parts) + "}")


# -- scalar rules --------------------------------------------------------------


def check_nonnegative(errs: Errs, value: Any, path: str) -> None:
    """``ValidateNonnegativeField`` (only for an integer that is present)."""
    if isinstance(value, int) and not isinstance(value, bool) and value < 0:
        errs.append(FieldError.invalid(path, value, NON_NEGATIVE))


def check_dns_label(errs: Errs, value: str, path: str) -> None:
    """``ValidateDNS1123Label``."""
    for msg in is_dns1123_label(value):
        errs.append(FieldError.invalid(path, value, msg))


def check_dns_subdomain(errs: Errs, value: str, path: str) -> None:
    """``ValidateDNS1123Subdomain``."""
    for msg in is_dns1123_subdomain(value):
        errs.append(FieldError.invalid(path, value, msg))


def check_qualified_name(errs: Errs, value: str, path: str) -> None:
    """``ValidateQualifiedName``."""
    for msg in is_qualified_name(value):
        errs.append(FieldError.invalid(path, value, msg))


def port_num_errors(port: int) -> list[str]:
    """``validation.IsValidPortNum``."""
    return [] if 1 <= port <= 65535 else [PORT_RANGE]


_PORT_NAME_CHARSET: Final = re.compile("[-a-z0-9]+")
_PORT_NAME_LETTER: Final = re.compile("[a-z]")


def port_name_errors(name: str) -> list[str]:
    """``validation.IsValidPortName`` (IANA_SVC_NAME), every message that applies."""
    errs: list[str] = []
    if len(name) > 15:
        errs.append("must be no more than 15 characters")
    if not _PORT_NAME_CHARSET.fullmatch(name):
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not _PORT_NAME_LETTER.search(name):
        errs.append("must contain at least one letter (a-z)")
    if "--" in name:
        errs.append("must not contain consecutive hyphens")
    if name and (name[0] == "-" or name[-1] == "-"):
        errs.append("must not begin or end with a hyphen")
    return errs


def check_port_num_or_name(errs: Errs, port: Any, path: str) -> None:
    """``ValidatePortNumOrName`` of an IntOrString."""
    if isinstance(port, bool):
        return
    if isinstance(port, int):
        for msg in port_num_errors(port):
            errs.append(FieldError.invalid(path, port, msg))
    elif isinstance(port, str):
        for msg in port_name_errors(port):
            errs.append(FieldError.invalid(path, port, msg))


def check_protocol(errs: Errs, value: Any, path: str) -> None:
    """A port's protocol: required, one of SCTP, TCP, UDP."""
    if not value:
        errs.append(FieldError.required(path))
    elif value not in PROTOCOLS:
        errs.append(FieldError.not_supported(path, value, PROTOCOLS))


def check_enum(
    errs: Errs, value: Any, path: str, valid: Sequence[str], *, required: bool = True
) -> None:
    """Required (when ``required``) and one of ``valid`` (``NotSupported`` lists them
    in the order given)."""
    if value is None or value == "":
        if required:
            errs.append(FieldError.required(path))
        return
    if value not in valid:
        errs.append(FieldError.not_supported(path, value, valid))


def check_immutable(errs: Errs, new: Any, old: Any, path: str, shown: Any = None) -> None:
    """``ValidateImmutableField``: ``Invalid(path, new, "field is immutable")``."""
    if new != old:
        errs.append(FieldError.invalid(path, new if shown is None else shown, IMMUTABLE))


# -- IntOrString percentages ---------------------------------------------------

_PERCENT_FMT: Final = "[0-9]+%"
_PERCENT_RE: Final = re.compile(_PERCENT_FMT)


def int_or_percent(value: Any) -> int:
    """``getIntOrPercentValue``: the integer, or the number before ``%``."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        digits = value[:-1] if value.endswith("%") else value
        try:
            return int(digits)
        except ValueError:
            return 0
    return 0


def check_positive_int_or_percent(errs: Errs, value: Any, path: str) -> None:
    """``ValidatePositiveIntOrPercent``."""
    if isinstance(value, str):
        if not _PERCENT_RE.fullmatch(value):
            msg = regex_error(
                "a valid percent string must be a numeric string followed by an ending '%'",
                _PERCENT_FMT,
                "1%",
                "93%",
            )
            errs.append(FieldError.invalid(path, value, msg))
    else:
        check_nonnegative(errs, value, path)


def check_not_more_than_100_percent(errs: Errs, value: Any, path: str) -> None:
    """``IsNotMoreThan100Percent`` (percent strings only)."""
    if isinstance(value, str) and _PERCENT_RE.fullmatch(value) and int_or_percent(value) > 100:
        errs.append(FieldError.invalid(path, value, "must not be greater than 100%"))


# -- label selectors -----------------------------------------------------------

_OPERATORS: Final = ("In", "NotIn", "Exists", "DoesNotExist")


def check_label_selector(errs: Errs, selector: Any, path: str) -> None:
    """``metav1validation.ValidateLabelSelector``."""
    if not isinstance(selector, MAPPING):
        return
    for i, req in enumerate(items(selector, "matchExpressions")):
        rpath = f"{path}.matchExpressions[{i}]"
        op = req.get("operator")
        values = req.get("values") or []
        if op in ("In", "NotIn"):
            if not values:
                errs.append(
                    FieldError.required(
                        f"{rpath}.values", "must be specified when `operator` is 'In' or 'NotIn'"
                    )
                )
        elif op in ("Exists", "DoesNotExist"):
            if values:
                errs.append(
                    FieldError.forbidden(
                        f"{rpath}.values",
                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    )
                )
        else:
            errs.append(
                FieldError.invalid(f"{rpath}.operator", op, "not a valid selector operator")
            )
        check_qualified_name(errs, str_of(req, "key"), f"{rpath}.key")
    labels = str_map(selector.get("matchLabels"))
    if labels is not None:
        errs.extend(validate_labels(labels, f"{path}.matchLabels"))


def selector_is_valid(selector: Any) -> bool:
    """Whether ``LabelSelectorAsSelector`` accepts the selector (nil is valid: it
    selects nothing)."""
    if selector is None:
        return True
    errs: Errs = []
    check_label_selector(errs, selector, "s")
    return not errs


def selector_is_empty(selector: Any) -> bool:
    """No matchLabels and no matchExpressions (``selector.Empty()``)."""
    if not isinstance(selector, MAPPING):
        return True
    return not selector.get("matchLabels") and not selector.get("matchExpressions")


def selector_matches(selector: Any, labels: Mapping[str, Any] | None) -> bool:
    """Whether a (valid) ``LabelSelector`` selects an object with ``labels`` (a nil
    selector selects nothing, an empty one everything)."""
    labels = labels or {}
    if not isinstance(selector, MAPPING):
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for req in items(selector, "matchExpressions"):
        key, op = str_of(req, "key"), req.get("operator")
        values = req.get("values") or []
        present = key in labels
        if op == "In" and not (present and labels[key] in values):
            return False
        if op == "NotIn" and present and labels[key] in values:
            return False
        if op == "Exists" and not present:
            return False
        if op == "DoesNotExist" and present:
            return False
    return True
