"""The small formatters kube's printers share (``pkg/printers/internalversion`` and
the apimachinery helpers it calls), over stored JSON objects.

Every function here is pure: ages are measured against an explicit ``now`` (seconds
since the epoch), so a test fixes the clock by passing it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from typing import Any, Final

from kubewerk.core.meta import human_duration, parse_time
from kubewerk.core.quantity import Format, canonical_string, suffixed_value
from kubewerk.core.selectors import LabelSelectorError, label_selector_from_dict

JSON = dict[str, Any]

NONE: Final = "<none>"
UNSET: Final = "<unset>"
UNKNOWN: Final = "<unknown>"


# -- reading a JSON object defensively ---------------------------------------------------


def obj_map(value: Any) -> JSON:
    """``value`` if it is a JSON object, else an empty one (absent or null fields)."""
    return value if isinstance(value, dict) else {}


def obj_list(value: Any) -> list[Any]:
    """``value`` if it is a JSON array, else an empty one."""
    return value if isinstance(value, list) else []


def obj_str(value: Any) -> str:
    """``value`` if it is a string, else Go's zero value ``""``."""
    return value if isinstance(value, str) else ""


def obj_int(value: Any, default: int = 0) -> int:
    """``value`` if it is an integer (not a bool), else ``default`` (Go's zero value)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return default


def meta(obj: Mapping[str, Any]) -> JSON:
    """The object's ``metadata`` (empty when absent)."""
    return obj_map(obj.get("metadata"))


def deleting(obj: Mapping[str, Any]) -> bool:
    """True when ``metadata.deletionTimestamp`` is set."""
    return bool(meta(obj).get("deletionTimestamp"))


# -- times ------------------------------------------------------------------------------


def since(timestamp: Any, now: float) -> str:
    """``translateTimestampSince``: the human age of an RFC 3339 time, ``<unknown>``
    when it is unset (or unreadable)."""
    ts = parse_time(timestamp) if isinstance(timestamp, str) and timestamp else None
    if ts is None:
        return UNKNOWN
    return human_duration(now - ts)


def age(obj: Mapping[str, Any], now: float) -> str:
    """The Age cell: the time since ``metadata.creationTimestamp``."""
    return since(meta(obj).get("creationTimestamp"), now)


# -- labels and selectors ---------------------------------------------------------------


def format_labels(labels: Any) -> str:
    """``labels.FormatLabels``: ``k=v`` pairs sorted by key, comma-joined; ``<none>``
    for an empty or absent map."""
    pairs = obj_map(labels)
    if not pairs:
        return NONE
    return ",".join(f"{k}={obj_str(pairs[k])}" for k in sorted(pairs))


def selector_string(selector: Any) -> str | None:
    """``LabelSelectorAsSelector(selector).String()``, or None when it is invalid
    (a nil selector selects nothing and prints as ``""``)."""
    try:
        return str(label_selector_from_dict(selector if isinstance(selector, dict) else None))
    except (LabelSelectorError, AttributeError, TypeError):
        return None


def format_label_selector(selector: Any) -> str:
    """``metav1.FormatLabelSelector``: the selector's string, ``<none>`` when it is
    empty or nil, ``<error>`` when it does not parse."""
    text = selector_string(selector)
    if text is None:
        return "<error>"
    return text or NONE


# -- containers -------------------------------------------------------------------------


def container_cells(containers: Any) -> tuple[str, str]:
    """``layoutContainerCells``: the containers' names and images, each comma-joined."""
    items = [obj_map(c) for c in obj_list(containers)]
    return (
        ",".join(obj_str(c.get("name")) for c in items),
        ",".join(obj_str(c.get("image")) for c in items),
    )


def template_containers(obj: Mapping[str, Any]) -> Any:
    """``spec.template.spec.containers`` of a workload."""
    spec = obj_map(obj.get("spec"))
    return obj_map(obj_map(spec.get("template")).get("spec")).get("containers")


# -- lists ------------------------------------------------------------------------------


def list_with_more(items: Sequence[str], count: int, limit: int, empty: str = UNSET) -> str:
    """``listWithMoreString``: the first ``limit`` items comma-joined, then
    `` + N more...`` for the ``count - limit`` left out; ``empty`` when there is none."""
    text = ",".join(items[:limit])
    if count > limit:
        return f"{text} + {count - limit} more..."
    return text or empty


def bool_ptr(value: Any) -> str:
    """``printBoolPtr``: ``True``/``False``, or ``<unset>`` when absent."""
    if isinstance(value, bool):
        return "True" if value else "False"
    return UNSET


def int_or_string(value: Any) -> str:
    """``intstr.IntOrString.String()``."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return str(value)
    return obj_str(value)


# -- quantities -------------------------------------------------------------------------

_QUANTITY_RE: Final = re.compile(r"([+-]?)([0-9]*\.?[0-9]*)([a-zA-Z]*[-+]?[0-9]*)")


def _parse_quantity(text: str) -> tuple[Fraction, Format] | None:
    """A quantity's exact value and format (``DecimalSI``, ``BinarySI`` or
    ``DecimalExponent``), or None when ``text`` is not a quantity."""
    m = _QUANTITY_RE.fullmatch(text.strip())
    if not m or not m.group(2) or m.group(2) == ".":
        return None
    sign, number, suffix = m.groups()
    return suffixed_value(sign + number, suffix)


def quantity_string(value: Any) -> str:
    """``resource.Quantity.String()``: the canonical form of a quantity as Kubernetes
    prints it (``1500m``, ``1k``, ``1536Mi``, ``5e3``); ``0`` for an absent one.

    A value that is not a quantity is returned as given (Kubernetes would have
    refused it on the way in).
    """
    if value is None:
        return "0"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        text = str(value)
    elif isinstance(value, float):
        text = repr(value)
    elif isinstance(value, str):
        text = value
    else:
        return str(value)
    parsed = _parse_quantity(text)
    if parsed is None:
        return text
    return canonical_string(*parsed)


def resource_quantity(resources: Any, name: str) -> str:
    """The canonical quantity of ``resources[name]`` (``0`` when absent)."""
    return quantity_string(obj_map(resources).get(name))


def join(items: Iterable[str], sep: str = ",") -> str:
    """``strings.Join``."""
    return sep.join(items)
