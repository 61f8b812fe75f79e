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

How it runs: each definition is compiled once, on first use, into a table of its fields
(``$ref`` resolved, Go type names worked out) and a closure that walks an object with it;
a definition set's compiled tables are shared by every ``TypedDecoder`` over that set. A
body walks only its own values: a scalar of the expected type costs one ``type()`` test
and no call, and neither the Go struct, the JSON path nor the reported path of a value
is built unless that value is in error or unknown (the path of an unknown field is put
together on the way back up, the struct and JSON path of a type error while the error
unwinds).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
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
_GO_INTEGERS = ("int", "int32", "int64")


class TypeMismatch(ValueError):
    """A body that does not decode into the kind's Go type; ``str()`` is Go's message."""


class _Mismatch(Exception):
    """A value of the wrong type, on its way up to ``decode``: the enclosing objects add
    their field names (innermost first) and the nearest named struct."""

    __slots__ = ("go_type", "json", "struct", "value")

    def __init__(self, value: Any, go_type: str) -> None:
        super().__init__()
        self.value = value
        self.go_type = go_type
        self.json: list[str] = []
        self.struct: str | None = None

    def message(self) -> str:
        what = unmarshal_kind(self.value)
        if what == "number" and self.go_type.lstrip("*") in _GO_INTEGERS:
            what = f"number {self.value!r}" if isinstance(self.value, float) else what
        path = ".".join(reversed(self.json))
        return (
            f"json: cannot unmarshal {what} into Go struct field "
            f"{self.struct}.{path} of type {self.go_type}"
        )


Unknown = list[str] | None
"""What a compiled check returns: the paths of the unknown fields it dropped, relative
to the value checked (each starts with ``.key`` or ``[index]``), or None for none."""
Check = Callable[[Any], Unknown]
Entry = tuple[tuple[type, ...], Check | None]
"""How a value is checked: its type is one of the tuple (accepted, nothing to walk), or
the check is called (None: anything is accepted). ``null`` is handled by the caller."""

_ANYTHING: Entry = ((), None)


class _Compiled:
    """The compiled form of one definition set: an ``Entry`` per schema, a field walker
    per definition with properties. Compiling is serialised by a lock and a root is only
    published once everything it reaches is complete."""

    def __init__(self, definitions: Mapping[str, JSON]) -> None:
        self.definitions = definitions
        self._lock = threading.Lock()
        self._walkers: dict[str, Check] = {}
        self._roots: dict[str, Check] = {}

    def root(self, name: str) -> Check:
        """The walker of the object at the root of a body of definition ``name``."""
        walker = self._roots.get(name)
        if walker is None:
            with self._lock:
                walker = self._roots.get(name)
                if walker is None:
                    walker = self._root_walker(name)
                    self._roots[name] = walker
        return walker

    def _root_walker(self, name: str) -> Check:
        schema = self.definitions.get(name) or {}
        props = schema.get("properties")
        if not isinstance(props, Mapping) or schema.get("x-kubernetes-preserve-unknown-fields"):
            return _accept
        struct = name.rsplit(".", 1)[-1]
        fields: dict[str, Entry] = {}
        walker = _object_walker(fields, struct, keep_type_meta=True)
        self._fill(fields, props, struct)
        return walker

    # -- compile ------------------------------------------------------------------

    def _deref(self, schema: Mapping[str, Any]) -> tuple[Mapping[str, Any], str | None]:
        ref = schema.get("$ref")
        if isinstance(ref, str):
            name = ref.rsplit("/", 1)[-1]
            return self.definitions.get(name) or {}, name
        return schema, None

    def go_type(self, schema: Mapping[str, Any]) -> str:
        """The Go type a schema decodes into, as ``UnmarshalTypeError`` names it."""
        target, name = self._deref(schema)
        if name is not None:
            parts = name.split(".")
            return f"{parts[-2]}.{parts[-1]}"
        kind = target.get("type")
        if kind == "array":
            items = target.get("items")
            return "[]" + (self.go_type(items) if isinstance(items, Mapping) else "interface {}")
        if kind == "object":
            extra = target.get("additionalProperties")
            if isinstance(extra, Mapping):
                return "map[string]" + self.go_type(extra)
            return "map[string]interface {}"
        key = (str(kind or ""), str(target.get("format") or ""))
        return _GO_SCALARS.get(key) or _GO_SCALARS.get((key[0], ""), "interface {}")

    def _fill(self, fields: dict[str, Entry], props: Mapping[str, Any], struct: str) -> None:
        for key, schema in props.items():
            fields[key] = self._entry(schema, struct)

    def _walker(self, name: str, target: Mapping[str, Any]) -> Check:
        """The field walker of definition ``name`` (an object with properties), compiled
        once; registered before its fields so that a definition reaching itself works."""
        walker = self._walkers.get(name)
        if walker is None:
            fields: dict[str, Entry] = {}
            struct = name.rsplit(".", 1)[-1]
            walker = _object_walker(fields, struct, keep_type_meta=False)
            self._walkers[name] = walker
            self._fill(fields, target["properties"], struct)
        return walker

    def _entry(self, schema: Mapping[str, Any], struct: str) -> Entry:
        """How a value of ``schema`` is checked inside struct ``struct``."""
        target, name = self._deref(schema)
        if name == _INT_OR_STRING:
            return (str, int), _scalar_check(_is_int_or_string, "intstr.IntOrString")
        if name == _QUANTITY:
            return (str, int, float), _scalar_check(_is_quantity, "resource.Quantity")
        if target.get("x-kubernetes-preserve-unknown-fields"):
            return _ANYTHING
        kind = target.get("type")
        if kind == "object" or "properties" in target:
            go_type = self.go_type(schema)
            if isinstance(target.get("properties"), Mapping):
                if name is not None:
                    walker = self._walker(name, target)
                else:
                    fields: dict[str, Entry] = {}
                    walker = _object_walker(fields, None, keep_type_meta=False)
                    self._fill(fields, target["properties"], struct)
                return (), _typed(dict, go_type, walker)
            extra = target.get("additionalProperties")
            if isinstance(extra, Mapping):
                return (), _typed(dict, go_type, _map_walker(self._entry(extra, struct)))
            return (), _typed(dict, go_type, _accept)
        if kind == "array":
            go_type = self.go_type(schema)
            items = target.get("items")
            if isinstance(items, Mapping):
                return (), _typed(list, go_type, _list_walker(self._entry(items, struct)))
            return (), _typed(list, go_type, _accept)
        if kind == "string":
            return (str,), _scalar_check(_is_string, self.go_type(schema))
        if kind == "integer":
            return (int,), _scalar_check(_is_integer, self.go_type(schema))
        if kind == "number":
            return (int, float), _scalar_check(_is_number, self.go_type(schema))
        if kind == "boolean":
            return (bool,), _scalar_check(_is_boolean, self.go_type(schema))
        return _ANYTHING


# -- the pieces a compiled definition is made of ------------------------------------


def _accept(value: Any) -> Unknown:
    return None


def _is_int_or_string(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _is_quantity(value: Any) -> bool:
    return isinstance(value, str | int | float) and not isinstance(value, bool)


def _is_string(value: Any) -> bool:
    return isinstance(value, str)


def _is_integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_boolean(value: Any) -> bool:
    return isinstance(value, bool)


def _scalar_check(accepts: Callable[[Any], bool], go_type: str) -> Check:
    """A scalar whose exact type was not the expected one (a subclass, or wrong)."""

    def check(value: Any) -> Unknown:
        if not accepts(value):
            raise _Mismatch(value, go_type)
        return None

    return check


def _typed(container: type, go_type: str, walk: Check) -> Check:
    """``walk`` behind an ``isinstance(value, container)`` test."""

    def check(value: Any) -> Unknown:
        if not isinstance(value, container):
            raise _Mismatch(value, go_type)
        return walk(value)

    return check


def _list_walker(entry: Entry) -> Check:
    """The items of a list (``null`` items are kept, as Go keeps a nil element)."""
    ok, item_check = entry
    if item_check is None:
        return _accept

    def walk(value: list[Any]) -> Unknown:
        out: Unknown = None
        for index, item in enumerate(value):
            if type(item) in ok or item is None:
                continue
            sub = item_check(item)
            if sub:
                if out is None:
                    out = []
                prefix = f"[{index}]"
                out.extend([prefix + p for p in sub])
        return out

    return walk


def _map_walker(entry: Entry) -> Check:
    """The values of a map (``null`` values are kept)."""
    ok, item_check = entry
    if item_check is None:
        return _accept

    def walk(value: JSON) -> Unknown:
        out: Unknown = None
        for key, item in value.items():
            if type(item) in ok or item is None:
                continue
            sub = item_check(item)
            if sub:
                if out is None:
                    out = []
                prefix = "." + key
                out.extend([prefix + p for p in sub])
        return out

    return walk


def _object_walker(fields: dict[str, Entry], struct: str | None, *, keep_type_meta: bool) -> Check:
    """The walk of an object with properties ``fields`` (filled in by the caller after
    this returns): unknown fields and ``null`` members are dropped. ``struct`` is the Go
    struct a type error in a field is reported in (None: the enclosing one's, for an
    inline object); ``keep_type_meta`` keeps ``apiVersion`` and ``kind`` unreported
    when the schema lacks them (the root object)."""

    def walk(value: JSON) -> Unknown:
        out: Unknown = None
        drop: list[str] | None = None
        for key, item in value.items():
            entry = fields.get(key)
            if entry is None:
                if keep_type_meta and key in ("apiVersion", "kind"):
                    continue
                if drop is None:
                    drop = []
                drop.append(key)
                if out is None:
                    out = []
                out.append("." + key)
                continue
            ok, check = entry
            if type(item) in ok:
                continue
            if item is None:
                if drop is None:
                    drop = []
                drop.append(key)
                continue
            if check is None:
                continue
            try:
                sub = check(item)
            except _Mismatch as exc:
                exc.json.append(key)
                if exc.struct is None:
                    exc.struct = struct
                raise
            if sub:
                if out is None:
                    out = []
                prefix = "." + key
                out.extend([prefix + p for p in sub])
        if drop is not None:
            for key in drop:
                del value[key]
        return out

    return walk


_compiled_sets: dict[int, _Compiled] = {}
_compiled_lock = threading.Lock()


def _compiled_for(definitions: Mapping[str, JSON]) -> _Compiled:
    """The compiled form shared by every decoder over ``definitions`` (the object
    itself, which the compiled form keeps alive, so its id is not reused)."""
    found = _compiled_sets.get(id(definitions))
    if found is None or found.definitions is not definitions:
        with _compiled_lock:
            found = _compiled_sets.get(id(definitions))
            if found is None or found.definitions is not definitions:
                found = _Compiled(definitions)
                _compiled_sets[id(definitions)] = found
    return found


class TypedDecoder:
    """Decodes objects of one definition set (``k8s_openapi.definitions()``)."""

    def __init__(self, definitions: Mapping[str, JSON]) -> None:
        self.definitions = definitions
        self._compiled = _compiled_for(definitions)

    def decode(self, obj: JSON, root: str) -> list[str]:
        """Drop unknown fields and nulls of ``obj`` (in place) per definition ``root``;
        return the dropped fields' paths. Raises ``TypeMismatch``."""
        walker = self._compiled.root(root)
        try:
            unknown = walker(obj)
        except _Mismatch as exc:
            if exc.struct is None:
                exc.struct = root.rsplit(".", 1)[-1]
            raise TypeMismatch(exc.message()) from None
        return [p[1:] for p in unknown] if unknown else []
