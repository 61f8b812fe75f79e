"""pydantic ``ValidationError`` → Kubernetes ``FieldError`` with Kubernetes field paths.

Paths are written as apimachinery's ``field.Path`` prints them: ``spec.triggers[0].type``
for list items, ``spec.labels[app]`` for map keys. The wording follows the messages the
API server's OpenAPI validator produces for the same rule (``... in body should be
greater than or equal to 1``), so a parse error reads like the server's rejection.
"""

from __future__ import annotations

import enum
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from kubewerk.core.errors import FieldError
from kubewerk.core.gofmt import go_quote, json_kind

_TYPE_NAMES: dict[str, str] = {
    "int": "integer",
    "bool": "boolean",
    "str": "string",
    "string": "string",
    "float": "number",
    "dict": "object",
    "list": "array",
    "model": "object",
    "model_attributes": "object",
}


def _json_type_of(value: Any) -> str:
    """The JSON type the API server would name for ``value`` (``core.gofmt.json_kind``);
    a Python value with no JSON form (given to ``from_dict``) by its Python type."""
    kind = json_kind(value)
    return type(value).__name__ if kind == "unknown" else kind


def _bare_type(tp: Any) -> Any:
    """Remove Annotated and the None of Optional; leave real unions."""
    while True:
        origin = typing.get_origin(tp)
        if origin is typing.Annotated:
            tp = typing.get_args(tp)[0]
            continue
        if origin is typing.Union or origin is types.UnionType:
            rest = [a for a in typing.get_args(tp) if a is not type(None)]
            if len(rest) == 1:
                tp = rest[0]
                continue
        return tp


def _model_field(model: type[BaseModel], key: str) -> tuple[str, Any] | None:
    fields = model.__pydantic_fields__
    info = fields.get(key)
    if info is not None:
        return (info.alias or key), info.annotation
    for info in fields.values():
        if info.alias == key:
            return key, info.annotation
    return None


def _path_and_type(model: type[BaseModel], loc: tuple[int | str, ...]) -> tuple[str, Any]:
    """The Kubernetes path for a pydantic ``loc`` and the type found at its end."""
    path = ""
    tp: Any = model
    for step in loc:
        tp = _bare_type(tp)
        origin = typing.get_origin(tp)
        if isinstance(tp, type) and issubclass(tp, BaseModel) and isinstance(step, str):
            found = _model_field(tp, step)
            if found is None:  # an extra key, or a key pydantic synthesised
                path = f"{path}.{step}" if path else step
                tp = Any
                continue
            name, tp = found
            path = f"{path}.{name}" if path else name
        elif isinstance(step, int) and origin in (list, tuple, Sequence, typing.Sequence):
            path = f"{path}[{step}]"
            args = typing.get_args(tp)
            tp = args[0] if args else Any
        elif origin in (dict, Mapping, typing.Mapping):
            path = f"{path}[{step}]"
            args = typing.get_args(tp)
            tp = args[1] if len(args) == 2 else Any
        elif origin is typing.Union or origin is types.UnionType:
            # the error is inside one member of a real union (int-or-string): report it
            # at the union itself
            break
        else:
            path = f"{path}[{step}]" if isinstance(step, int) else f"{path}.{step}"
            tp = Any
    return path, tp


def _allowed(tp: Any) -> list[Any]:
    tp = _bare_type(tp)
    if typing.get_origin(tp) is typing.Literal:
        return [a.value if isinstance(a, enum.Enum) else a for a in typing.get_args(tp)]
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return [m.value for m in tp]
    return []


def _field_error(model: type[BaseModel], err: ErrorDetails) -> FieldError:
    path, tp = _path_and_type(model, tuple(err["loc"]))
    kind = err["type"]
    ctx = err.get("ctx") or {}
    value = err.get("input")
    where = path or "<root>"
    if kind == "missing":
        return FieldError.required(path)
    if kind in ("literal_error", "enum"):
        return FieldError.not_supported(path, value, _allowed(tp))
    if kind == "greater_than_equal":
        return FieldError.invalid(
            path, value, f"{where} in body should be greater than or equal to {ctx.get('ge')}"
        )
    if kind == "greater_than":
        return FieldError.invalid(
            path, value, f"{where} in body should be greater than {ctx.get('gt')}"
        )
    if kind == "less_than_equal":
        return FieldError.invalid(
            path, value, f"{where} in body should be less than or equal to {ctx.get('le')}"
        )
    if kind == "less_than":
        return FieldError.invalid(
            path, value, f"{where} in body should be less than {ctx.get('lt')}"
        )
    if kind == "multiple_of":
        return FieldError.invalid(
            path, value, f"{where} in body should be a multiple of {ctx.get('multiple_of')}"
        )
    if kind == "string_too_short":
        return FieldError.invalid(
            path, value, f"{where} in body should be at least {ctx.get('min_length')} chars long"
        )
    if kind == "string_too_long":
        return FieldError.too_long(path, int(ctx.get("max_length", -1)))
    if kind == "string_pattern_mismatch":
        return FieldError.invalid(
            path, value, f"{where} in body should match '{ctx.get('pattern')}'"
        )
    if kind == "too_short":
        unit = "properties" if isinstance(value, Mapping) else "items"
        return FieldError.invalid(
            path, value, f"{where} in body should have at least {ctx.get('min_length')} {unit}"
        )
    if kind == "too_long":
        actual = int(ctx.get("actual_length", len(value) if hasattr(value, "__len__") else -1))
        return FieldError.too_many(path, actual, int(ctx.get("max_length", -1)))
    if kind.startswith(("datetime_", "date_")) and isinstance(value, str):
        fmt = "date-time" if kind.startswith("datetime") else "date"
        return FieldError.type_invalid(
            path, value, f"{where} in body must be of type {fmt}: {go_quote(value)}"
        )
    base = kind.removesuffix("_type").removesuffix("_parsing").removesuffix("_from_float")
    if kind.endswith(("_type", "_parsing", "_from_float")) and base in _TYPE_NAMES | {
        "datetime": "string",
        "date": "string",
        "bytes": "string",
    }:
        want = _TYPE_NAMES.get(base, "string")
        if base == "int" and _bare_type(tp) is not int:
            want = "integer"
        return FieldError.type_invalid(
            path, value, f"{where} in body must be of type {want}: {go_quote(_json_type_of(value))}"
        )
    return FieldError.invalid(path, value, err["msg"])


def pydantic_field_errors(model: type[BaseModel], exc: ValidationError) -> list[FieldError]:
    """The field errors for a failed parse of ``model``, deduplicated, in pydantic's order.

    A value that fails an int-or-string union is reported once: with the failed
    constraint of the member that has the value's type (a string that does not match
    the pattern), or else as a type error.
    """
    items: list[tuple[str, ErrorDetails | list[ErrorDetails]]] = []
    unions: dict[str, list[ErrorDetails]] = {}
    for err in exc.errors(include_url=False):
        path, tp = _path_and_type(model, tuple(err["loc"]))
        if typing.get_origin(_bare_type(tp)) in (typing.Union, types.UnionType):
            group = unions.get(path)
            if group is None:
                group = unions[path] = []
                items.append((path, group))
            group.append(err)
        else:
            items.append((path, err))
    out: list[FieldError] = []
    seen: set[str] = set()
    for path, entry in items:
        if isinstance(entry, list):
            specific = [
                e for e in entry if not e["type"].endswith(("_type", "_parsing", "_from_float"))
            ]
            if specific:
                field_error = _field_error(model, specific[0])
            else:
                value = entry[0].get("input")
                field_error = FieldError.type_invalid(
                    path,
                    value,
                    f"{path} in body must be of type integer or string: "
                    f"{go_quote(_json_type_of(value))}",
                )
        else:
            field_error = _field_error(model, entry)
        text = field_error.message()
        if text not in seen:
            seen.add(text)
            out.append(field_error)
    return out
