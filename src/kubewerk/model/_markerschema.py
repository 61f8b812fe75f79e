"""What each marker writes into a schema: one small unit per marker kind, registered.

A unit receives the marker and the :class:`MarkerTarget` (the schema being built, what
the Python type became, where it is) and either writes its schema facts or refuses a
marker that does not fit the type with :class:`~kubewerk.model.errors.ModelDefinitionError`.
:func:`apply_markers` runs the unit of every marker of a value, in the order they were
written, then the checks that need all of them (list type, transition rules below
lists, CEL rules written out).

Adding a marker is one unit plus its registration::

    @marker_unit(Title)
    def _title(marker: Title, target: MarkerTarget) -> None:
        target.schema["title"] = marker.title

Markers without a unit (pydantic validators, ``Strict``, JSON-schema hints) are
Python-only and leave the schema alone.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn, TypeVar

import annotated_types as at
from pydantic.fields import FieldInfo

from kubewerk.model._fragment import (
    SCALAR_TYPES,
    Category,
    Fragment,
    fail,
    is_resource,
    scalar_type,
    type_name,
)
from kubewerk.model.markers import (
    Format,
    Immutable,
    ListMapKeys,
    ListType,
    MapType,
    PrinterColumn,
    Rule,
    Title,
    _EmbeddedResource,
    _Nullable,
    _PreserveUnknownFields,
    _Selectable,
)

__all__ = ["MarkerTarget", "apply_markers", "marker_unit", "marker_unit_when"]

M = TypeVar("M")


@dataclass
class MarkerTarget:
    """The schema one value's markers decorate, and what a unit may consult or record."""

    fragment: Fragment
    category: Category | None
    """What the Python type became (``map`` and ``model`` are both objects)."""
    where: str
    """``Class.field`` (with ``[]`` per list or map level) for messages."""
    admits_none: bool
    """Whether the annotation admits ``None`` (``X | None``)."""
    python_type: Any
    """The Python type without ``Annotated`` and ``| None``."""
    json_type: str | None
    """The schema's ``type`` before any marker ran (None for int-or-string and ``Any``)."""
    rules: list[dict[str, Any]] = field(default_factory=list)
    """``x-kubernetes-validations`` entries, written out once every unit has run."""
    list_type: str | None = None
    """``x-kubernetes-list-type`` chosen by ``ListType`` / ``ListMapKeys``."""
    map_keys: tuple[str, ...] | None = None
    """The keys ``ListMapKeys`` named (Python or JSON names)."""

    @property
    def schema(self) -> dict[str, Any]:
        """The schema being decorated."""
        return self.fragment.schema

    @property
    def int_or_string(self) -> bool:
        """Whether the value is an ``int | str`` (``anyOf`` with no ``type``)."""
        return self.category == "int-or-string"

    def fail(self, message: str) -> NoReturn:
        """Refuse the definition, naming the field."""
        fail(self.where, message)

    def require(self, ok: bool, marker: str, what: str) -> None:
        """Refuse ``marker`` unless ``ok``: ``<marker> applies to <what>, not <type>``."""
        if not ok:
            shown = "int-or-string" if self.int_or_string else (self.json_type or "untyped value")
            self.fail(f"{marker} applies to {what}, not {shown}")


MarkerUnit = Callable[[Any, MarkerTarget], None]

_UNITS: dict[type, MarkerUnit] = {}
_UNITS_WHEN: list[tuple[Callable[[Any], bool], MarkerUnit]] = []
_RESOLVED: dict[type, MarkerUnit | None] = {}


def marker_unit(
    *marker_types: type[M],
) -> Callable[[Callable[[M, MarkerTarget], None]], Callable[[M, MarkerTarget], None]]:
    """Register the decorated function as the unit for markers of these types (and their
    subclasses)."""

    def register(unit: Callable[[M, MarkerTarget], None]) -> Callable[[M, MarkerTarget], None]:
        for marker_type in marker_types:
            _UNITS[marker_type] = unit
        _RESOLVED.clear()
        return unit

    return register


def marker_unit_when(
    applies: Callable[[Any], bool],
) -> Callable[[MarkerUnit], MarkerUnit]:
    """Register the decorated function for markers recognised by their attributes rather
    than their type (consulted when no type has a unit)."""

    def register(unit: MarkerUnit) -> MarkerUnit:
        _UNITS_WHEN.append((applies, unit))
        return unit

    return register


def _unit_for(marker: Any) -> MarkerUnit | None:
    marker_type = type(marker)
    try:
        unit = _RESOLVED[marker_type]
    except KeyError:
        unit = next((_UNITS[t] for t in marker_type.__mro__ if t in _UNITS), None)
        _RESOLVED[marker_type] = unit
    if unit is not None:
        return unit
    return next((unit for applies, unit in _UNITS_WHEN if applies(marker)), None)


def apply_markers(
    fragment: Fragment,
    category: Category | None,
    markers: Sequence[Any],
    where: str,
    *,
    admits_none: bool,
    python_type: Any = None,
) -> None:
    """Apply markers to ``fragment``'s schema, refusing those that do not fit its type."""
    schema = fragment.schema
    target = MarkerTarget(
        fragment,
        category,
        where,
        admits_none,
        python_type,
        schema.get("type"),
        list(schema.get("x-kubernetes-validations", [])),
    )
    for marker in markers:
        unit = _unit_for(marker)
        if unit is not None:
            unit(marker, target)
    if target.list_type is not None:
        _finish_list_type(target)
    # below atomic lists and sets, old and new items cannot be correlated
    below_items = any(path.startswith("[*]") for path in fragment.transitions)
    if target.json_type == "array" and target.list_type != "map" and below_items:
        target.fail(
            "transition rules (oldSelf, Immutable) are not allowed inside items of a list "
            "that is not ListType.MAP"
        )
    if target.rules:
        schema["x-kubernetes-validations"] = target.rules


# -- numbers ---------------------------------------------------------------------------


def _require_number(marker: object, target: MarkerTarget) -> None:
    target.require(
        target.json_type in ("integer", "number"), type(marker).__name__, "integers and numbers"
    )


@marker_unit(at.Ge)
def _minimum(marker: at.Ge, target: MarkerTarget) -> None:
    _require_number(marker, target)
    target.schema["minimum"] = marker.ge


@marker_unit(at.Gt)
def _exclusive_minimum(marker: at.Gt, target: MarkerTarget) -> None:
    _require_number(marker, target)
    target.schema["minimum"] = marker.gt
    target.schema["exclusiveMinimum"] = True


@marker_unit(at.Le)
def _maximum(marker: at.Le, target: MarkerTarget) -> None:
    _require_number(marker, target)
    target.schema["maximum"] = marker.le


@marker_unit(at.Lt)
def _exclusive_maximum(marker: at.Lt, target: MarkerTarget) -> None:
    _require_number(marker, target)
    target.schema["maximum"] = marker.lt
    target.schema["exclusiveMaximum"] = True


@marker_unit(at.MultipleOf)
def _multiple_of(marker: at.MultipleOf, target: MarkerTarget) -> None:
    _require_number(marker, target)
    target.schema["multipleOf"] = marker.multiple_of


# -- lengths: of strings, lists and maps -----------------------------------------------


def _length(target: MarkerTarget, name: str, keys: tuple[str, str, str], bound: int) -> None:
    """Write ``bound`` under the key for the value's shape (string, list, map)."""
    string_key, list_key, map_key = keys
    if target.json_type == "string" or target.int_or_string:
        target.schema[string_key] = bound
    elif target.json_type == "array":
        target.schema[list_key] = bound
    elif target.category == "map":
        target.schema[map_key] = bound
    else:
        target.require(False, name, "strings, lists and maps")


@marker_unit(at.MinLen)
def _min_length(marker: at.MinLen, target: MarkerTarget) -> None:
    _length(target, "min_length", ("minLength", "minItems", "minProperties"), marker.min_length)


@marker_unit(at.MaxLen)
def _max_length(marker: at.MaxLen, target: MarkerTarget) -> None:
    _length(target, "max_length", ("maxLength", "maxItems", "maxProperties"), marker.max_length)


# -- strings ---------------------------------------------------------------------------


def _has_pattern(marker: Any) -> bool:
    # pydantic's Field(pattern=...) leaves an object of a private class with a ``pattern``
    # attribute in the metadata; recognise it by that attribute
    return getattr(marker, "pattern", None) is not None and not isinstance(marker, FieldInfo)


@marker_unit_when(_has_pattern)
def _pattern(marker: Any, target: MarkerTarget) -> None:
    target.require(target.json_type == "string" or target.int_or_string, "pattern", "strings")
    pattern = marker.pattern
    target.schema["pattern"] = pattern if isinstance(pattern, str) else pattern.pattern


@marker_unit(Format)
def _format(marker: Format, target: MarkerTarget) -> None:
    target.require(
        target.json_type in ("string", "integer", "number"), "Format", "strings and numbers"
    )
    target.schema["format"] = marker.format


# -- any value -------------------------------------------------------------------------


@marker_unit(Title)
def _title(marker: Title, target: MarkerTarget) -> None:
    target.schema["title"] = marker.title


@marker_unit(_Nullable)
def _nullable(marker: _Nullable, target: MarkerTarget) -> None:
    if not target.admits_none:
        target.fail("Nullable needs a type that admits None (X | None)")
    target.schema["nullable"] = True


# -- objects and maps ------------------------------------------------------------------


@marker_unit(_PreserveUnknownFields)
def _preserve_unknown_fields(marker: _PreserveUnknownFields, target: MarkerTarget) -> None:
    model = target.python_type
    if target.category == "model" and not getattr(model, "__kube_preserve_unknown__", False):
        target.fail(
            f"PreserveUnknownFields on a model field needs {type_name(model)} "
            "declared with preserve_unknown_fields=True"
        )
    target.require(
        target.json_type in ("object", None) and not target.int_or_string,
        "PreserveUnknownFields",
        "objects",
    )
    target.schema["x-kubernetes-preserve-unknown-fields"] = True


@marker_unit(_EmbeddedResource)
def _embedded_resource(marker: _EmbeddedResource, target: MarkerTarget) -> None:
    free_form_map = target.category == "map" and target.schema.get(
        "x-kubernetes-preserve-unknown-fields"
    )
    typed = target.category == "model" and is_resource(target.python_type)
    if not (free_form_map or typed):
        target.fail("EmbeddedResource applies to dict[str, Any] and Resource-typed fields")
    target.schema["x-kubernetes-embedded-resource"] = True


@marker_unit(MapType)
def _map_type(marker: MapType, target: MarkerTarget) -> None:
    target.require(
        target.json_type == "object" and target.category in ("map", "model"),
        "MapType",
        "maps and objects",
    )
    target.schema["x-kubernetes-map-type"] = marker.value


# -- lists -----------------------------------------------------------------------------


@marker_unit(ListType)
def _list_type(marker: ListType, target: MarkerTarget) -> None:
    target.require(target.json_type == "array", "ListType", "lists")
    if target.list_type is not None and target.list_type != marker.value:
        target.fail(f"conflicting list types {target.list_type!r} and {marker.value!r}")
    target.list_type = marker.value


@marker_unit(ListMapKeys)
def _list_map_keys(marker: ListMapKeys, target: MarkerTarget) -> None:
    target.require(target.json_type == "array", "ListMapKeys", "lists")
    if target.list_type not in (None, "map"):
        target.fail(f"ListMapKeys needs ListType.MAP, not {target.list_type!r}")
    target.list_type = "map"
    target.map_keys = marker.keys


def _finish_list_type(target: MarkerTarget) -> None:
    """Write the list type once all markers are known; check what it needs of the items."""
    schema = target.schema
    schema["x-kubernetes-list-type"] = target.list_type
    items = schema["items"]
    if target.list_type == "set" and scalar_type(items) is None:
        target.fail("ListType.SET needs scalar items (strings, numbers, booleans)")
    if target.list_type == "map":
        if target.map_keys is None:
            target.fail("ListType.MAP needs ListMapKeys(...) naming the key fields")
        if items.get("type") != "object" or "properties" not in items:
            target.fail("ListType.MAP needs items that are objects (a model)")
        schema["x-kubernetes-list-map-keys"] = [
            _list_map_key(items, key, target.where) for key in target.map_keys
        ]


def _list_map_key(items: dict[str, Any], key: str, where: str) -> str:
    """The JSON name of a list-map key, which must be a required (or defaulted) scalar."""
    props: dict[str, Any] = items["properties"]
    names: dict[str, str] = items.get("x-python-names", {})
    json_key = key if key in props else names.get(key, key)
    if json_key not in props:
        fail(where, f"list map key {key!r} is not a field of the item type")
    prop = props[json_key]
    if scalar_type(prop) is None and not prop.get("x-kubernetes-int-or-string"):
        fail(where, f"list map key {key!r} must be a scalar field")
    if json_key not in items.get("required", []) and "default" not in prop:
        fail(where, f"list map key {key!r} must be required or have a default")
    return json_key


# -- CEL rules -------------------------------------------------------------------------


@marker_unit(Rule)
def _rule(marker: Rule, target: MarkerTarget) -> None:
    target.rules.append(marker.to_schema())
    if marker.is_transition:
        target.fragment.transitions.append("")


@marker_unit(Immutable)
def _immutable(marker: Immutable, target: MarkerTarget) -> None:
    target.rules.append(
        {"rule": "self == oldSelf", "message": marker.message or "Value is immutable"}
    )
    target.fragment.transitions.append("")
    target.fragment.immutable = marker


# -- facts placed at the root: printer columns, selectable fields -----------------------


@marker_unit(PrinterColumn)
def _printer_column(marker: PrinterColumn, target: MarkerTarget) -> None:
    column_type = marker.type or _column_type(target.schema, target.category)
    if column_type is None:
        target.fail("PrinterColumn applies to strings, numbers, booleans and timestamps")
    target.fragment.columns.append(("", marker, column_type))


def _column_type(schema: Mapping[str, Any], category: Category | None) -> str | None:
    """The printer-column type of a value: its scalar type, ``date`` for timestamps."""
    if category == "int-or-string":
        return "string"
    json_type = schema.get("type")
    if json_type == "string" and schema.get("format") == "date-time":
        return "date"
    if json_type in SCALAR_TYPES:
        return str(json_type)
    return None


@marker_unit(_Selectable)
def _selectable(marker: _Selectable, target: MarkerTarget) -> None:
    if target.json_type not in ("string", "integer", "boolean") or target.int_or_string:
        target.fail(
            f"Selectable applies to string, integer and boolean fields, not {target.json_type}"
        )
    target.fragment.selectable.append(("", str(target.json_type)))
