"""Python types and markers → Kubernetes structural schema (``JSONSchemaProps``).

The walk produces, for every model class, a :class:`Fragment`: the schema (inline, no
``$ref``) and the things that need the object's root to be placed — printer columns and
selectable fields declared on fields (as paths relative to the class) and the positions
of transition rules (which Kubernetes allows only where old and new values can be
correlated, i.e. not below atomic lists or sets). Fragments are cached per class.
"""

from __future__ import annotations

import datetime as dt
import enum
import inspect
import types
import typing
import weakref
from collections.abc import Mapping, Sequence
from typing import Any

import annotated_types as at
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined, to_jsonable_python

from kubewerk.core.gofmt import json_kind
from kubewerk.model._fragment import (
    SCALAR_TYPES,
    Category,
    Fragment,
    fail,
    is_resource,
    type_name,
)
from kubewerk.model._markerschema import apply_markers
from kubewerk.model.errors import ModelDefinitionError
from kubewerk.model.markers import AtMostOneOf, ExactlyOneOf, PrinterColumn, Rule, _Nullable
from kubewerk.model.status_phase import PhaseSchema

__all__ = ["Fragment", "check_class", "model_fragment", "resource_schema"]

_NONE = type(None)

_CACHE: weakref.WeakKeyDictionary[type, Fragment] = weakref.WeakKeyDictionary()
_IN_PROGRESS: list[type] = []


def _class_description(cls: type) -> str | None:
    """The class docstring, cleaned; None when there is none."""
    raw = cls.__dict__.get("__doc__")
    if not raw or not isinstance(raw, str):
        return None
    text = inspect.cleandoc(raw).strip()
    return text or None


def _flatten(meta: Sequence[Any]) -> tuple[list[Any], str | None]:
    """Expand FieldInfo/GroupedMetadata into plain markers; pick up a description."""
    out: list[Any] = []
    description: str | None = None
    for item in meta:
        if isinstance(item, FieldInfo):
            inner, _ = _flatten(item.metadata)
            out.extend(inner)
            if item.description:
                description = item.description
        elif isinstance(item, at.GroupedMetadata) and not isinstance(item, FieldInfo):
            out.extend(item)
        else:
            out.append(item)
    return out, description


def _unwrap(tp: Any, meta: list[Any]) -> tuple[Any, list[Any], str | None]:
    description: str | None = None
    while typing.get_origin(tp) is typing.Annotated:
        args = typing.get_args(tp)
        tp = args[0]
        flat, desc = _flatten(args[1:])
        meta = [*flat, *meta]
        description = description or desc
    return tp, meta, description


def _is_model(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, BaseModel)


def _is_object_meta(tp: Any) -> bool:
    return isinstance(tp, type) and bool(getattr(tp, "__kube_object_meta__", False))


def _enum_schema(values: list[Any], where: str) -> dict[str, Any]:
    kinds = set()
    for value in values:
        kind = json_kind(value)
        if kind not in SCALAR_TYPES:
            fail(where, f"enum value {value!r} is not a JSON scalar")
        kinds.add(kind)
    if len(kinds) != 1:
        fail(where, f"enum values must all have one JSON type, got {sorted(kinds)}")
    return {"type": kinds.pop(), "enum": list(values)}


def _type_schema(tp: Any, where: str) -> tuple[Fragment, Category | None]:
    """Schema of a type without its markers; returns (fragment, category)."""
    origin = typing.get_origin(tp)
    if tp is Any or tp is object:
        return Fragment({"x-kubernetes-preserve-unknown-fields": True}), None
    if origin is typing.Literal:
        values = [v.value if isinstance(v, enum.Enum) else v for v in typing.get_args(tp)]
        return Fragment(_enum_schema(values, where)), "enum"
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return Fragment(_enum_schema([m.value for m in tp], where)), "enum"
    if tp is bool:
        return Fragment({"type": "boolean"}), "boolean"
    if tp is int:
        return Fragment({"type": "integer"}), "integer"
    if tp is float:
        return Fragment({"type": "number"}), "number"
    if tp is str:
        return Fragment({"type": "string"}), "string"
    if tp is dt.datetime:
        return Fragment({"type": "string", "format": "date-time"}), "string"
    if tp is dt.date:
        return Fragment({"type": "string", "format": "date"}), "string"
    if tp is bytes:
        return Fragment({"type": "string", "format": "byte"}), "string"
    if origin in (set, frozenset) or tp in (set, frozenset):
        fail(where, "sets have no stable order; use list[...] with ListType.SET")
    if origin in (list, Sequence, typing.Sequence) or (
        origin is tuple and len(typing.get_args(tp)) == 2 and typing.get_args(tp)[1] is Ellipsis
    ):
        args = typing.get_args(tp)
        if not args:
            fail(where, "a list needs an item type, e.g. list[str]")
        item = _walk(args[0], [], f"{where}[]")
        return (
            Fragment(
                {"type": "array", "items": item.schema},
                [("[*]" + p, c, t) for p, c, t in item.columns],
                [("[*]" + p, t) for p, t in item.selectable],
                ["[*]" + p for p in item.transitions],
            ),
            "array",
        )
    if origin is tuple or tp in (list, tuple, dict):
        fail(where, f"{type_name(tp)} needs type arguments (list[X], dict[str, X])")
    if origin in (dict, Mapping, typing.Mapping):
        key, value = typing.get_args(tp)
        key = _unwrap(key, [])[0]
        if key is not str and not (
            typing.get_origin(key) is typing.Literal
            or (isinstance(key, type) and issubclass(key, enum.Enum))
        ):
            fail(where, f"map keys must be strings, not {type_name(key)}")
        value_tp = _unwrap(value, [])[0]
        if value_tp is Any or value_tp is object:
            return (
                Fragment({"type": "object", "x-kubernetes-preserve-unknown-fields": True}),
                "map",
            )
        inner = _walk(value, [], f"{where}[]")
        if inner.columns or inner.selectable:
            fail(where, "printer columns and selectable fields cannot be inside a map")
        return (
            Fragment(
                {"type": "object", "additionalProperties": inner.schema},
                transitions=["[*]" + p for p in inner.transitions],
            ),
            "map",
        )
    if _is_object_meta(tp):
        return Fragment({"type": "object"}), "object"
    if is_resource(tp):
        frag = resource_fragment(tp)
        schema = dict(frag.schema)
        schema["x-kubernetes-embedded-resource"] = True
        info = getattr(tp, "__kube__", None)
        if info is not None:
            # a typed template is of exactly that kind, as the Python model demands
            props = dict(schema["properties"])
            props["apiVersion"] = {**props["apiVersion"], "enum": [info.api_version]}
            props["kind"] = {**props["kind"], "enum": [info.kind]}
            schema["properties"] = props
        return Fragment(schema, [], [], frag.transitions), "model"
    if _is_model(tp):
        return model_fragment(tp), "model"
    if origin is typing.Union or origin is types.UnionType:
        fail(where, "nested unions are not supported")
    fail(where, f"type {type_name(tp)} cannot be expressed in a Kubernetes structural schema")


def _int_or_string(members: list[Any], meta: list[Any], where: str) -> Fragment:
    pattern_meta: list[Any] = []
    for member in members:
        _, member_meta, _ = _unwrap(member, [])
        pattern_meta.extend(member_meta)
    schema: dict[str, Any] = {
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "x-kubernetes-int-or-string": True,
    }
    frag = Fragment(schema)
    apply_markers(frag, "int-or-string", [*pattern_meta, *meta], where, admits_none=False)
    return frag


def _walk(tp: Any, meta: list[Any], where: str) -> Fragment:
    """Schema for a type and its markers."""
    tp, meta, _ = _unwrap(tp, meta)
    admits_none = False
    origin = typing.get_origin(tp)
    if origin is typing.Union or origin is types.UnionType:
        args = typing.get_args(tp)
        admits_none = _NONE in args
        members = [a for a in args if a is not _NONE]
        if len(members) == 1:
            tp, meta, _ = _unwrap(members[0], meta)
        else:
            bases = {_unwrap(m, [])[0] for m in members}
            if bases == {int, str}:
                frag = _int_or_string(members, meta, where)
                if admits_none and any(isinstance(m, _Nullable) for m in meta):
                    frag.schema["nullable"] = True
                return frag
            names = " | ".join(type_name(m) for m in members)
            fail(
                where,
                f"the union {names} cannot be expressed in a Kubernetes structural schema "
                "(only X | None and int | str are allowed)",
            )
    if tp is _NONE:
        fail(where, "a field of type None has no schema")
    frag, category = _type_schema(tp, where)
    if category == "model" and _is_model(tp):
        # cached fragments are shared: copy the top level before decorating it
        frag = frag.copy_top()
    apply_markers(frag, category, meta, where, admits_none=admits_none, python_type=tp)
    return frag


def _default_json(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True, exclude_none=True)
    return to_jsonable_python(value, by_alias=True)


def _object_rule(
    cls: type,
    rule: Rule | ExactlyOneOf | AtMostOneOf,
    props: dict[str, Any],
    names: dict[str, str],
    required: list[str],
) -> dict[str, Any]:
    where = cls.__name__
    if isinstance(rule, Rule):
        return rule.to_schema()
    json_fields = []
    for name in rule.fields:
        json_field = name if name in props else names.get(name)
        if json_field is None or json_field not in props:
            fail(where, f"{type(rule).__name__} names {name!r}, which is not a field")
        if json_field in required:
            fail(where, f"{type(rule).__name__}: field {json_field!r} is required, so always set")
        json_fields.append(json_field)
    checks = ",".join(f"has(self.{f})" for f in json_fields)
    listed = " ".join(json_fields)
    if isinstance(rule, ExactlyOneOf):
        out = {
            "rule": f"[{checks}].filter(x,x==true).size() == 1",
            "message": rule.message or f"exactly one of the fields in [{listed}] must be set",
        }
    else:
        out = {
            "rule": f"[{checks}].filter(x,x==true).size() <= 1",
            "message": rule.message or f"at most one of the fields in [{listed}] may be set",
        }
    return out


def _object_fragment(cls: type[BaseModel], *, skip: frozenset[str] = frozenset()) -> Fragment:
    """The object schema of a model class (its own fields, rules and flags)."""
    props: dict[str, Any] = {}
    names: dict[str, str] = {}
    required: list[str] = []
    frag = Fragment({})
    parent_rules: list[dict[str, Any]] = []
    for name, info in cls.__pydantic_fields__.items():
        if name in skip:
            continue
        json_field = info.serialization_alias or info.alias or name
        where = f"{cls.__name__}.{name}"
        annotation = info.annotation
        if annotation is _NONE:
            continue  # e.g. the status of a kind declared without one
        meta, description = _flatten(info.metadata)
        child = _walk(annotation, meta, where)
        field_schema = child.schema
        if info.description or description:
            field_schema["description"] = info.description or description
        if info.is_required():
            required.append(json_field)
        elif info.default is not PydanticUndefined and info.default is not None:
            try:
                field_schema["default"] = _default_json(info.default)
            except Exception as exc:  # pragma: no cover - pydantic raises for odd values
                fail(where, f"default {info.default!r} is not JSON: {exc}")
        if child.immutable is not None and not info.is_required():
            message = child.immutable.message or f"{json_field} is immutable once set"
            parent_rules.append(
                {
                    "rule": f"has(self.{json_field}) == has(oldSelf.{json_field})",
                    "message": message,
                }
            )
            frag.transitions.append("")
        if child.columns or child.selectable:
            for path, _col, _type in child.columns:
                if "[*]" in path:
                    fail(where, "a PrinterColumn cannot be declared inside a list item")
            for path, _type in child.selectable:
                if "[*]" in path:
                    fail(where, "a selectable field cannot be inside a list item")
        prefixed = child.prefixed("." + json_field)
        frag.columns.extend(prefixed.columns)
        frag.selectable.extend(prefixed.selectable)
        frag.transitions.extend(prefixed.transitions)
        props[json_field] = field_schema
        names[name] = json_field
    schema: dict[str, Any] = {"type": "object"}
    description = _class_description(cls)
    if description:
        schema["description"] = description
    if props:
        schema["properties"] = props
    if required:
        schema["required"] = sorted(required)
    if getattr(cls, "__kube_preserve_unknown__", False):
        schema["x-kubernetes-preserve-unknown-fields"] = True
    low, high = getattr(cls, "__kube_properties__", (None, None))
    if low is not None:
        schema["minProperties"] = low
    if high is not None:
        schema["maxProperties"] = high
    map_type = getattr(cls, "__kube_map_type__", None)
    if map_type is not None:
        schema["x-kubernetes-map-type"] = map_type.value
    rules = [
        _object_rule(cls, r, props, names, required) for r in getattr(cls, "__kube_rules__", ())
    ]
    for r in getattr(cls, "__kube_rules__", ()):
        if isinstance(r, Rule) and r.is_transition:
            frag.transitions.append("")
    rules.extend(parent_rules)
    if rules:
        schema["x-kubernetes-validations"] = rules
    # Python names of the fields, for ListMapKeys/one-of lookups by the parent; removed
    # from the final CRD by :func:`finalize`
    schema["x-python-names"] = names
    frag.schema = schema
    return frag


def model_fragment(cls: type[BaseModel]) -> Fragment:
    """The (cached) fragment of a model class."""
    cached = _CACHE.get(cls)
    if cached is not None:
        return cached
    if cls in _IN_PROGRESS:
        chain = " -> ".join(c.__name__ for c in [*_IN_PROGRESS, cls])
        raise ModelDefinitionError(
            f"{cls.__name__}: recursive types cannot be expressed without $ref ({chain})"
        )
    if not cls.__pydantic_complete__:
        cls.model_rebuild(raise_errors=False)
    if not cls.__pydantic_complete__:
        raise ModelDefinitionError(
            f"{cls.__name__}: the model is not complete (unresolved forward references?); "
            "call model_rebuild() first"
        )
    _IN_PROGRESS.append(cls)
    try:
        frag = _object_fragment(cls)
    finally:
        _IN_PROGRESS.pop()
    _CACHE[cls] = frag
    return frag


_ROOT_DESCRIPTIONS = {
    "apiVersion": "APIVersion names the versioned schema of this object: <group>/<version>.",
    "kind": "Kind is the type of this object, in CamelCase.",
}


def resource_fragment(cls: type[BaseModel]) -> Fragment:
    """The root schema of a resource class (apiVersion, kind, metadata, spec, status...)."""
    cached = _CACHE.get(cls)
    if cached is not None:
        return cached
    if cls in _IN_PROGRESS:
        raise ModelDefinitionError(f"{cls.__name__}: a resource cannot embed itself")
    _IN_PROGRESS.append(cls)
    try:
        frag = _object_fragment(cls)
    finally:
        _IN_PROGRESS.pop()
    schema = frag.schema
    props = schema.setdefault("properties", {})
    props["apiVersion"] = {"type": "string", "description": _ROOT_DESCRIPTIONS["apiVersion"]}
    props["kind"] = {"type": "string", "description": _ROOT_DESCRIPTIONS["kind"]}
    props["metadata"] = {"type": "object"}
    required = [
        r for r in schema.get("required", []) if r not in ("apiVersion", "kind", "metadata")
    ]
    if required:
        schema["required"] = required
    else:
        schema.pop("required", None)
    info = getattr(cls, "__kube__", None)
    lifecycle = getattr(info, "lifecycle", None)
    if lifecycle is not None:
        _apply_phases(cls, frag, lifecycle.phase_schema())
    _CACHE[cls] = frag
    return frag


def _apply_phases(cls: type[BaseModel], frag: Fragment, declared: Any) -> None:
    """Write a ``lifecycle=`` declaration into a resource's root fragment (see
    :mod:`kubewerk.model.status_phase`). The status and phase schemas are copied before
    they change: the status model's own fragment is cached and shared."""
    where = cls.__name__
    if not isinstance(declared, PhaseSchema):
        fail(where, f"lifecycle.phase_schema() must return a PhaseSchema, not {declared!r}")
    props = frag.schema["properties"]
    status = props.get("status")
    phase = (status or {}).get("properties", {}).get("phase")
    if phase is None:
        fail(
            where,
            "lifecycle= needs a status with a 'phase' field "
            "(e.g. a subclass of kubewerk.lifecycle.LifecycleStatus)",
        )
    if phase.get("type") != "string":
        fail(where, "lifecycle= needs status.phase to be a string field")
    phases = list(declared.phases)
    if "enum" in phase and sorted(phase["enum"]) != sorted(phases):
        fail(
            where,
            f"status.phase allows {phase['enum']} but the lifecycle declares {phases}",
        )
    longest = max(len(p) for p in phases)
    if phase.get("maxLength", longest) < longest:
        fail(where, f"status.phase's maxLength {phase['maxLength']} is shorter than a phase")
    new_phase = {**phase, "enum": phases, "maxLength": phase.get("maxLength", longest)}
    if declared.description:
        new_phase["description"] = declared.description
    if declared.rules:
        new_phase["x-kubernetes-validations"] = [
            *phase.get("x-kubernetes-validations", []),
            *(rule.to_schema() for rule in declared.rules),
        ]
        frag.transitions.extend(".status.phase" for r in declared.rules if r.is_transition)
    status = {**status, "properties": {**status["properties"], "phase": new_phase}}
    props["status"] = status
    if declared.object_rules:
        frag.schema["x-kubernetes-validations"] = [
            *frag.schema.get("x-kubernetes-validations", []),
            *(rule.to_schema() for rule in declared.object_rules),
        ]
        frag.transitions.extend("" for r in declared.object_rules if r.is_transition)
    columns = [path for path, _column, _type in frag.columns]
    info = getattr(cls, "__kube__", None)
    columns.extend(c.json_path for c in getattr(info, "printer_columns", ()))
    if declared.column is not None and ".status.phase" not in columns:
        column = PrinterColumn(declared.column, description="The lifecycle phase")
        frag.columns.append((".status.phase", column, "string"))


def resource_schema(cls: type[BaseModel]) -> Fragment:
    """The finished ``openAPIV3Schema`` of one resource version, with its placed facts."""
    frag = resource_fragment(cls)
    return Fragment(
        finalize(frag.schema), list(frag.columns), list(frag.selectable), list(frag.transitions)
    )


def finalize(schema: Any) -> Any:
    """A deep copy without the generator's private keys."""
    if isinstance(schema, dict):
        return {k: finalize(v) for k, v in schema.items() if k != "x-python-names"}
    if isinstance(schema, list):
        return [finalize(v) for v in schema]
    return schema


def check_class(cls: type[BaseModel]) -> None:
    """Build the class's schema now so that a bad definition fails at class creation."""
    if is_resource(cls):
        # abstract resources (Resource itself, Resource[Spec, Status]) have no schema of
        # their own; their parts are checked with the concrete kinds that use them
        if getattr(cls, "__kube__", None) is not None:
            resource_fragment(cls)
        return
    if _is_object_meta(cls):
        return
    model_fragment(cls)
