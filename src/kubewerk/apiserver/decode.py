"""Request bodies into JSON values, and the limits every decoded value obeys (one place).

Every body the embedded server reads (objects, patches, DeleteOptions) is decoded here,
and every decoded value and every patch result passes ``check_depth`` before it reaches
admission or storage. What comes out is plain JSON data that the server can write back
in any answer that embeds it:

- **Size**: bodies over ``MAX_BODY_BYTES`` (3 MiB, kube-apiserver's limit) → 413.
- **Nesting**: at most ``MAX_DEPTH`` (100) levels of objects and arrays, the top level
  counting as one. Kubernetes' JSON decoder allows 10,000; the encoder here writes at
  most 254, and an answer embeds an object up to four levels deeper (a Table row inside
  a watch event), so the limit sits well under what can be written back, with room for
  the server's own recursive passes (patches, validation).
- **Numbers** as kube-apiserver's decoders (``sigs.k8s.io/json`` with PreserveInts,
  ``sigs.k8s.io/yaml``) leave them: integers outside int64 become float64; YAML's
  ``.nan``/``.inf`` are refused (Go's JSON encoder cannot write them); a YAML number
  too large for float64 stays the string it was written as; JSON's ``1e400`` is refused.
- **YAML** is read the way ``sigs.k8s.io/yaml`` (go-yaml v2) reads it, by
  ``kubewerk.core.yamlgo`` (which ``kubewerk validate`` and ``lint`` read manifests
  with too): timestamps stay strings, no base-60 numbers (``22:22`` is a string),
  mapping keys become strings (``1`` → ``"1"``, ``true`` → ``"true"``), ``!!binary``
  becomes its decoded text, ``!!set`` a mapping of nulls; one document per body.
  Aliases are expanded into independent copies, and a document whose expansion is
  mostly aliases is refused as go-yaml refuses it (``document contains excessive
  aliasing``), which stops "billion laughs" bodies before anything is expanded; so is
  an anchor that contains itself.
"""

from __future__ import annotations

import re
from typing import Any

import orjson
import yaml

from kubewerk.core import yamlgo
from kubewerk.core.gofmt import unmarshal_kind

MAX_BODY_BYTES = 3 * 1024 * 1024
MAX_DEPTH = 100

INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1

# orjson writes at most this many nested containers
_ENCODER_DEPTH = 254

_DIGITS = bytes(0x30 if 0x30 <= i <= 0x39 else 0x20 for i in range(256))
_LONG_DIGIT_RUN = b"0" * 19  # the shortest decimal integer outside int64 has 19 digits


class DecodeError(ValueError):
    """A body that cannot become a JSON value here; ``str()`` is the reason, Go-worded
    where Kubernetes has a wording."""


class TooDeep(DecodeError):
    """A value nesting deeper than ``MAX_DEPTH``."""


def too_deep(what: str) -> TooDeep:
    return TooDeep(
        f"{what} nests deeper than {MAX_DEPTH} levels of objects and arrays "
        f"(the embedded server's limit; Kubernetes allows 10000)"
    )


# -- JSON -------------------------------------------------------------------------------


def json_value(body: bytes, what: str = "the object") -> Any:
    """``body`` as a JSON value within the limits; raises ``DecodeError``.

    Cost on a small body: one ``orjson.loads`` and two byte scans; the depth is walked
    only when the body holds more than ``MAX_DEPTH`` brackets, the integers only when it
    holds a run of 19 digits.
    """
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        if "depth" in exc.msg:
            raise too_deep(what) from None
        if "infinity" in exc.msg:
            number = re.match(rb"[-+0-9.eE]*", body[exc.pos :])
            literal = number.group().decode() if number else ""
            raise DecodeError(
                f"json: cannot unmarshal number {literal} into Go value of type float64"
            ) from None
        raise DecodeError(str(exc)) from None
    if body.count(b"{") + body.count(b"[") > MAX_DEPTH:
        check_depth(value, what)
    if _LONG_DIGIT_RUN in body.translate(_DIGITS):
        value = _int64_or_float(value)
    return value


def _int64_or_float(value: Any) -> Any:
    """Integers outside int64 as float64, as Go's decoder with PreserveInts leaves them
    (orjson keeps integers up to 2**64 - 1; larger ones already arrive as floats)."""
    stack: list[Any] = [value]
    if (
        isinstance(value, int)
        and not isinstance(value, bool)
        and not INT64_MIN <= value <= INT64_MAX
    ):
        return float(value)
    while stack:
        node = stack.pop()
        items = (
            node.items()
            if isinstance(node, dict)
            else enumerate(node)
            if isinstance(node, list)
            else ()
        )
        for key, item in items:
            if isinstance(item, dict | list):
                stack.append(item)
            elif (
                isinstance(item, int)
                and not isinstance(item, bool)
                and not INT64_MIN <= item <= INT64_MAX
            ):
                node[key] = float(item)
    return value


# -- depth ------------------------------------------------------------------------------


def check_depth(value: Any, what: str = "the object") -> None:
    """Raise ``TooDeep`` when ``value`` nests more than ``MAX_DEPTH`` containers.

    The encoder does the walk (it stops at its own limit): ``value`` wrapped in enough
    lists that it encodes only if its own depth is within ``MAX_DEPTH``.
    """
    if not isinstance(value, dict | list):
        return
    wrapped: Any = value
    for _ in range(_ENCODER_DEPTH - MAX_DEPTH):
        wrapped = [wrapped]
    try:
        orjson.dumps(wrapped)
    except orjson.JSONEncodeError as exc:
        if "Recursion" in str(exc):
            raise too_deep(what) from None
        raise DecodeError(f"{what} cannot be written as JSON: {exc}") from None


# -- YAML -------------------------------------------------------------------------------


_PLAIN_BYTES = bytes(range(0x20, 0x7F)) + b"\n"
_SPACE_BEFORE_COLON = re.compile(rb'"[ \n]+:')
_SMALL_INT = 10**15
_MAX_SIMPLE_KEY = 1000  # YAML reads a mapping key only within 1024 characters of its start
_NOT_PLAIN: Any = object()


def _plain_json_object(body: bytes) -> Any:
    """``body`` read by ``orjson``, when it is a JSON object that the YAML reader
    certainly reads as the same value (YAML's flow syntax is a superset of JSON's);
    else ``_NOT_PLAIN``. Only the plainest JSON qualifies: printable ASCII, spaces and
    newlines (no tabs, carriage returns or control characters, which YAML refuses or
    reads otherwise), no backslash (no escapes), no ``<<`` (YAML's merge key), numbers
    that are integers below 10**15 in size (floats, exponents and big integers take
    YAML's number rules), no key longer than ``_MAX_SIMPLE_KEY`` (YAML refuses a key
    beyond 1024 characters) and no key twice in an object. Anything else takes the
    YAML reader, which alone decides values and errors.

    Keys are counted in the text as ``":`` (without escapes a string holds no ``"``, so
    each is a key's closing quote, or a string's opening quote before a ``:``, which
    only counts more); with no space between a key and its colon every key is counted,
    so the text's count equals the decoded objects' keys only when no object repeats
    a key and nothing else was counted."""
    if body.translate(None, _PLAIN_BYTES) or b"\\" in body or b"<<" in body:
        return _NOT_PLAIN
    if body.lstrip(b" \n")[:1] != b"{" or _SPACE_BEFORE_COLON.search(body):
        return _NOT_PLAIN
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        return _NOT_PLAIN
    keys = 0
    long_text = len(body) > _MAX_SIMPLE_KEY
    stack: list[Any] = [value]
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind is dict:
            keys += len(node)
            if long_text and any(len(key) > _MAX_SIMPLE_KEY for key in node):
                return _NOT_PLAIN
            stack.extend(node.values())
        elif kind is list:
            stack.extend(node)
        elif kind is float or (kind is int and not -_SMALL_INT < node < _SMALL_INT):
            return _NOT_PLAIN
    if keys != body.count(b'":'):
        return _NOT_PLAIN
    return value


def yaml_value(body: bytes, what: str = "the object") -> Any:
    """``body`` (one YAML document) as a JSON value within the limits, read by
    ``kubewerk.core.yamlgo`` as a cluster reads it; raises ``DecodeError``.

    An empty document is ``None``. A body that is plain JSON (most apply bodies: kubectl
    and the client libraries send JSON) is read by ``orjson`` when that certainly gives
    the same value (``_plain_json_object``), about 50 times faster than the YAML reader.
    """
    value = _plain_json_object(body)
    if value is not _NOT_PLAIN:
        # as json_value: no deeper than the brackets the text holds
        if body.count(b"{") + body.count(b"[") > MAX_DEPTH:
            check_depth(value, what)
        return value
    try:
        node = yamlgo.compose_document(body)
        if node is None:
            return None
        if b"*" in body and b"&" in body:
            yamlgo.check_aliases(node)
        value = yamlgo.node_value(node)
    except yaml.YAMLError as exc:
        raise DecodeError(yamlgo.go_error_text(exc)) from None
    except yamlgo.GoYAMLError as exc:
        raise DecodeError(str(exc)) from None
    except RecursionError:
        raise too_deep(what) from None
    check_depth(value, what)
    return value


# -- query parameters -------------------------------------------------------------------


def query_int64(text: str) -> int:
    """A query parameter read as metav1's conversions read an int64 (``strconv.ParseInt(s,
    10, 64)``): optional sign and ASCII digits, within int64; else ``DecodeError`` with
    Go's text (so ``nan``, ``inf``, ``1e400`` and ``1.5`` are refused, not read as floats)."""
    digits = text[1:] if text[:1] in ("+", "-") else text
    if not (digits.isascii() and digits.isdigit()):
        raise DecodeError(f'strconv.ParseInt: parsing "{text}": invalid syntax')
    value = int(text, 10)
    if not INT64_MIN <= value <= INT64_MAX:
        raise DecodeError(f'strconv.ParseInt: parsing "{text}": value out of range')
    return value


# -- DeleteOptions ----------------------------------------------------------------------

# field → (JSON check, the Go type named in encoding/json's error)
_DELETE_OPTION_FIELDS: dict[str, tuple[type | tuple[type, ...], str]] = {
    "kind": (str, "string"),
    "apiVersion": (str, "string"),
    "gracePeriodSeconds": (int, "int64"),
    "preconditions": (dict, "v1.Preconditions"),
    "orphanDependents": (bool, "bool"),
    "propagationPolicy": (str, "v1.DeletionPropagation"),
    "dryRun": (list, "[]string"),
    "ignoreStoreReadErrorWithClusterBreakingPotential": (bool, "bool"),
}
_PRECONDITION_FIELDS = {"uid": "types.UID", "resourceVersion": "string"}


def delete_options(body: dict[str, Any] | None, query: dict[str, str]) -> dict[str, Any]:
    """The DeleteOptions of a DELETE: from its body when it has one, else from the query,
    as kube-apiserver's delete handler reads them (a body makes the query's options
    ignored). Values of the wrong JSON type, and query values that do not parse, raise
    ``DecodeError`` with Go's wording."""
    if body is not None:
        for name, value in body.items():
            expected = _DELETE_OPTION_FIELDS.get(name)
            if expected is None or value is None:
                continue
            python_type, go_type = expected
            wrong = not isinstance(value, python_type) or (
                python_type is int and isinstance(value, bool)
            )
            if name == "dryRun" and not wrong:
                wrong = not all(isinstance(item, str) for item in value)
            if wrong:
                raise _unmarshal_error(value, f"DeleteOptions.{name}", go_type)
            if name == "gracePeriodSeconds" and not INT64_MIN <= value <= INT64_MAX:
                raise DecodeError(
                    f"json: cannot unmarshal number {value} into Go struct field "
                    f"DeleteOptions.gracePeriodSeconds of type int64"
                )
            if name == "preconditions":
                for field, field_type in _PRECONDITION_FIELDS.items():
                    if value.get(field) is not None and not isinstance(value[field], str):
                        raise _unmarshal_error(
                            value[field], f"DeleteOptions.preconditions.{field}", field_type
                        )
        return body
    options: dict[str, Any] = {}
    if "gracePeriodSeconds" in query:
        options["gracePeriodSeconds"] = query_int64(query["gracePeriodSeconds"])
    if "orphanDependents" in query:
        # metav1's query conversion: "false" and "0" (any case) are false, anything else true
        options["orphanDependents"] = query["orphanDependents"].lower() not in ("false", "0")
    if "propagationPolicy" in query:
        options["propagationPolicy"] = query["propagationPolicy"]
    return options


def _unmarshal_error(value: Any, field: str, go_type: str) -> DecodeError:
    return DecodeError(
        f"json: cannot unmarshal {unmarshal_kind(value)} "
        f"into Go struct field {field} of type {go_type}"
    )
