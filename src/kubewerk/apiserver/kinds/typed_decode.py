"""Typed decoding of a built-in kind's body against its vendored OpenAPI definition, as
kube-apiserver's JSON decoder (``sigs.k8s.io/json``, encoding/json's rules) decodes into
the kind's Go type:

* a value of the wrong JSON type is an ``UnmarshalTypeError``: ``json: cannot unmarshal
  string into Go struct field PodSpec.spec.containers of type []v1.Container`` (the Go
  struct holding the field, the field's JSON path from the root without indices, the Go
  type; a fractional number into an integer names the literal: ``number 1.5``); the first
  one in document order is reported;
* fields the type does not have are dropped and reported by path, list indices included
  (``spec.template.spec.containers[0].imagePullPolicyy``), for ``fieldValidation``;
* ``null`` members are dropped (Go decodes them to the zero value, which the object then
  omits or the defaults fill).

Schemas that accept anything (``RawExtension``, ``x-kubernetes-preserve-unknown-fields``,
an object without properties) are kept as they are. ``Quantity`` accepts JSON numbers,
``IntOrString`` strings and integers, as their ``UnmarshalJSON`` do.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubewerk.core.gofmt import unmarshal_kind

JSON = dict[str, Any]

_INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
_QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
_GO_SCALARS = {
    ("string", ""): "string",
    ("string", "byte"): "[]uint8",
    ("integer", "int32"): "int32",
    ("integer", "int64"): "int64",
    ("integer", ""): "int",
    ("number", "double"): "float64",
    ("number", ""): "float64",
    ("boolean", ""): "bool",
}


class TypeMismatch(ValueError):
    """A body that does not decode into the kind's Go type; ``str()`` is Go's message."""


class TypedDecoder:
    """Decodes objects of one definition set (``k8s_openapi.definitions()``)."""

    def __init__(self, definitions: Mapping[str, JSON]) -> None:
        self.definitions = definitions

    def decode(self, obj: JSON, root: str) -> list[str]:
        """Drop unknown fields and nulls of ``obj`` (in place) per definition ``root``;
        return the dropped fields' paths. Raises ``TypeMismatch``."""
        unknown: list[str] = []
        schema = self.definitions.get(root) or {}
        self._object(obj, schema, root.rsplit(".", 1)[-1], "", "", unknown)
        return unknown

    # -- helpers ------------------------------------------------------------------

    def _deref(self, schema: Mapping[str, Any]) -> tuple[Mapping[str, Any], str | None]:
        ref = schema.get("$ref")
        if isinstance(ref, str):
            name = ref.rsplit("/", 1)[-1]
            return self.definitions.get(name) or {}, name
        return schema, None

    def _go_type(self, schema: Mapping[str, Any]) -> str:
        target, name = self._deref(schema)
        if name is not None:
            parts = name.split(".")
            return f"{parts[-2]}.{parts[-1]}"
        kind = target.get("type")
        if kind == "array":
            items = target.get("items")
            return "[]" + (self._go_type(items) if isinstance(items, Mapping) else "interface {}")
        if kind == "object":
            extra = target.get("additionalProperties")
            if isinstance(extra, Mapping):
                return "map[string]" + self._go_type(extra)
            return "map[string]interface {}"
        key = (str(kind or ""), str(target.get("format") or ""))
        return _GO_SCALARS.get(key) or _GO_SCALARS.get((key[0], ""), "interface {}")

    @staticmethod
    def _mismatch(value: Any, struct: str, json_path: str, go_type: str) -> TypeMismatch:
        what = unmarshal_kind(value)
        if what == "number" and go_type.lstrip("*") in ("int", "int32", "int64"):
            what = f"number {value!r}" if isinstance(value, float) else what
        return TypeMismatch(
            f"json: cannot unmarshal {what} into Go struct field "
            f"{struct}.{json_path} of type {go_type}"
        )

    # -- the walk -----------------------------------------------------------------

    def _object(
        self,
        obj: JSON,
        schema: Mapping[str, Any],
        struct: str,
        json_path: str,
        path: str,
        unknown: list[str],
    ) -> None:
        props = schema.get("properties")
        if not isinstance(props, Mapping) or schema.get("x-kubernetes-preserve-unknown-fields"):
            return
        for key in list(obj):
            value = obj[key]
            field_path = f"{path}.{key}" if path else key
            if key not in props:
                if key not in ("apiVersion", "kind") or path:
                    del obj[key]
                    unknown.append(field_path)
                continue
            if value is None:
                del obj[key]
                continue
            field_json = f"{json_path}.{key}" if json_path else key
            self._value(value, props[key], struct, field_json, field_path, unknown)

    def _value(
        self,
        value: Any,
        schema: Mapping[str, Any],
        struct: str,
        json_path: str,
        path: str,
        unknown: list[str],
    ) -> None:
        target, name = self._deref(schema)
        if name == _INT_OR_STRING:
            if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
                return
            raise self._mismatch(value, struct, json_path, "intstr.IntOrString")
        if name == _QUANTITY:
            if isinstance(value, str | int | float) and not isinstance(value, bool):
                return
            raise self._mismatch(value, struct, json_path, "resource.Quantity")
        if target.get("x-kubernetes-preserve-unknown-fields"):
            return
        kind = target.get("type")
        if kind == "object" or "properties" in target:
            if not isinstance(value, dict):
                raise self._mismatch(value, struct, json_path, self._go_type(schema))
            if isinstance(target.get("properties"), Mapping):
                inner = name.rsplit(".", 1)[-1] if name else struct
                self._object(value, target, inner, json_path, path, unknown)
                return
            extra = target.get("additionalProperties")
            if isinstance(extra, Mapping):
                for key in list(value):
                    item = value[key]
                    if item is None:
                        continue
                    self._value(item, extra, struct, json_path, f"{path}.{key}", unknown)
            return
        if kind == "array":
            if not isinstance(value, list):
                raise self._mismatch(value, struct, json_path, self._go_type(schema))
            items = target.get("items")
            if isinstance(items, Mapping):
                for index, item in enumerate(value):
                    if item is None:
                        continue
                    self._value(item, items, struct, json_path, f"{path}[{index}]", unknown)
            return
        if kind == "string":
            if not isinstance(value, str):
                raise self._mismatch(value, struct, json_path, self._go_type(schema))
        elif kind == "integer":
            if isinstance(value, bool) or not isinstance(value, int):
                raise self._mismatch(value, struct, json_path, self._go_type(schema))
        elif kind == "number":
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise self._mismatch(value, struct, json_path, self._go_type(schema))
        elif kind == "boolean" and not isinstance(value, bool):
            raise self._mismatch(value, struct, json_path, self._go_type(schema))
