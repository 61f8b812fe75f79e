"""Path elements of structured-merge-diff field paths, as plain hashable tuples.

A field path names one position in an object: a struct or map field (``f:name``), an
item of a keyed associative list (``k:{"name":"a"}``), an item of a set-like list
(``v:"a"``) or a list index (``i:0``, for lists without identity; kubewerk never
produces those but reads them). Elements are tuples that order exactly as
structured-merge-diff's ``PathElement.Compare`` does (field names < keys < values <
indexes; values by type, then value), so sorting them gives the byte order of the
``fieldsV1`` encoding Kubernetes writes.

- field: ``(0, name)``
- key:   ``(1, ((name, frozen value), ...))`` sorted by name
- value: ``(2, frozen value)``
- index: ``(3, index)``

A frozen value is a hashable, ordered form of a JSON value (see ``freeze``).
"""

from __future__ import annotations

from typing import Any

import orjson

from kubewerk.core.gofmt import go_float_v, go_json, go_quote

__all__ = [
    "FIELD",
    "INDEX",
    "KEY",
    "VALUE",
    "Path",
    "PathElement",
    "decode_element",
    "element_string",
    "encode_element",
    "field",
    "freeze",
    "key_element",
    "path_string",
    "thaw",
    "value_element",
    "value_string",
]

PathElement = tuple[Any, ...]
Path = tuple[PathElement, ...]

FIELD = 0
KEY = 1
VALUE = 2
INDEX = 3

# value.Compare's type order: numbers < strings < booleans < lists < maps < null
_NUM, _STR, _BOOL, _LIST, _MAP, _NULL = range(6)


def freeze(value: Any) -> tuple[Any, ...]:
    """A hashable form of a JSON value that orders as structured-merge-diff's
    ``value.Compare`` (numbers compare numerically across int and float)."""
    if value is None:
        return (_NULL,)
    if value is True or value is False:
        return (_BOOL, value)
    if isinstance(value, int | float):
        return (_NUM, value)
    if isinstance(value, str):
        return (_STR, value)
    if isinstance(value, list):
        return (_LIST, tuple(freeze(v) for v in value))
    if isinstance(value, dict):
        return (_MAP, tuple(sorted((k, freeze(v)) for k, v in value.items())))
    raise TypeError(f"not a JSON value: {type(value).__name__}")


def thaw(frozen: tuple[Any, ...]) -> Any:
    """The JSON value ``freeze`` made ``frozen`` from."""
    tag = frozen[0]
    if tag == _NULL:
        return None
    if tag == _LIST:
        return [thaw(v) for v in frozen[1]]
    if tag == _MAP:
        return {k: thaw(v) for k, v in frozen[1]}
    return frozen[1]


def field(name: str) -> PathElement:
    return (FIELD, name)


def key_element(pairs: list[tuple[str, Any]]) -> PathElement:
    """A keyed list item's element from ``(key field, JSON value)`` pairs."""
    return (KEY, tuple(sorted((k, freeze(v)) for k, v in pairs)))


def value_element(value: Any) -> PathElement:
    return (VALUE, freeze(value))


def encode_element(pe: PathElement) -> str:
    """The ``fieldsV1`` key of an element: ``f:name``, ``k:{"a":1}`` (keys sorted, values
    as Go's encoding/json writes them), ``v:"x"``, ``i:0``."""
    kind = pe[0]
    if kind == FIELD:
        return "f:" + str(pe[1])
    if kind == KEY:
        return "k:{" + ",".join(f"{go_json(k)}:{go_json(thaw(v))}" for k, v in pe[1]) + "}"
    if kind == VALUE:
        return "v:" + go_json(thaw(pe[1]))
    return f"i:{pe[1]}"


class BadPathElement(ValueError):
    """A ``fieldsV1`` key that is not a path element."""


def decode_element(text: str) -> PathElement:
    """The element a ``fieldsV1`` key names; raises ``BadPathElement``."""
    if len(text) < 2 or text[1] != ":":
        raise BadPathElement(f"missing colon: {text}")
    kind, rest = text[0], text[2:]
    if kind == "f":
        return (FIELD, rest)
    try:
        if kind == "k":
            pairs = orjson.loads(rest)
            if not isinstance(pairs, dict):
                raise BadPathElement(f"key is not an object: {text}")
            return key_element(list(pairs.items()))
        if kind == "v":
            return value_element(orjson.loads(rest))
    except orjson.JSONDecodeError as exc:
        raise BadPathElement(f"{text}: {exc}") from None
    if kind == "i":
        try:
            return (INDEX, int(rest))
        except ValueError:
            raise BadPathElement(f"bad index: {text}") from None
    raise BadPathElement("unknown path element type")


def value_string(value: Any) -> str:
    """A JSON value as structured-merge-diff prints it in paths (``value.ToString``):
    strings Go-quoted (``%q``: ``"a<b"``, not JSON's ``"a\\u003cb"``), floats as Go's
    ``%v`` (``1e+21``), lists ``[a,b]``, maps ``k=v`` pairs (sorted), null ``null``."""
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, float):
        return go_float_v(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, list):
        return "[" + ",".join(value_string(v) for v in value) + "]"
    if isinstance(value, dict):
        return "".join(f"{k}={value_string(v)}" for k, v in sorted(value.items()))
    raise TypeError(f"not a JSON value: {type(value).__name__}")


def element_string(pe: PathElement) -> str:
    """An element as structured-merge-diff prints it in paths and errors
    (``PathElement.String``): ``.name``, ``[name="a",port=80]`` (keys sorted),
    ``[="x"]``, ``[0]``."""
    kind = pe[0]
    if kind == FIELD:
        return "." + str(pe[1])
    if kind == KEY:
        return "[" + ",".join(f"{k}={value_string(thaw(v))}" for k, v in pe[1]) + "]"
    if kind == VALUE:
        return f"[={value_string(thaw(pe[1]))}]"
    return f"[{pe[1]}]"


def path_string(path: Path) -> str:
    """A path as Kubernetes prints it in apply conflicts (``.spec.ports[port=80]``)."""
    return "".join(element_string(pe) for pe in path)
