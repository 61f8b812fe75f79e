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
- **YAML** is read the way ``sigs.k8s.io/yaml`` (go-yaml v2) reads it: timestamps stay
  strings, no base-60 numbers (``22:22`` is a string), mapping keys become strings
  (``1`` → ``"1"``, ``true`` → ``"true"``), ``!!binary`` becomes its decoded text,
  ``!!set`` a mapping of nulls; one document per body. Aliases are expanded into
  independent copies, and a document whose expansion is mostly aliases is refused as
  go-yaml refuses it (``document contains excessive aliasing``: more than 99% of the
  decoded nodes from aliases up to 400,000 nodes, falling to 10% at 4,000,000), which
  stops "billion laughs" bodies before anything is expanded. go-yaml checks that ratio
  while decoding; here it is checked once on the totals, which the composed document
  gives without expanding it. An anchor that contains itself is refused.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
import struct
from typing import Any

import orjson
import yaml

from kubewerk.core.gofmt import unmarshal_kind

MAX_BODY_BYTES = 3 * 1024 * 1024
MAX_DEPTH = 100

INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1

# orjson writes at most this many nested containers
_ENCODER_DEPTH = 254
# go-yaml's allowedAliasRatio range
_ALIAS_RATIO_LOW = 400_000
_ALIAS_RATIO_HIGH = 4_000_000

_DIGITS = bytes(0x30 if 0x30 <= i <= 0x39 else 0x20 for i in range(256))
_LONG_DIGIT_RUN = b"0" * 19  # the shortest decimal integer outside int64 has 19 digits


class DecodeError(ValueError):
    """A body that cannot become a JSON value here; ``str()`` is the reason, Go-worded
    where Kubernetes has a wording."""


class TooDeep(DecodeError):
    """A value nesting deeper than ``MAX_DEPTH``."""


def too_deep(what: str) -> TooDeep:
    return TooDeep(f"{what} nests deeper than {MAX_DEPTH} levels of objects and arrays "
                   f"(the embedded server's limit; Kubernetes allows 10000)")


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
            number = re.match(rb"[-+0-9.eE]*", body[exc.pos:])
            literal = number.group().decode() if number else ""
            raise DecodeError(f"json: cannot unmarshal number {literal} into Go value of type float64") from None
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
    if isinstance(value, int) and not isinstance(value, bool) and not INT64_MIN <= value <= INT64_MAX:
        return float(value)
    while stack:
        node = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, item in items:
            if isinstance(item, dict | list):
                stack.append(item)
            elif isinstance(item, int) and not isinstance(item, bool) and not INT64_MIN <= item <= INT64_MAX:
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

# go-yaml v2's plain-scalar rules where they differ from PyYAML's YAML 1.1 resolver:
# no base-60 numbers, Go's float syntax, integers in the forms strconv.ParseInt(s, 0, 64)
# reads once underscores are dropped, and y/Y/n/N as booleans.
_GO_INT = re.compile(r"^[-+]?(?:0b[01_]+|0o[0-7_]+|0x[0-9a-fA-F_]+|[0-9][0-9_]*)$")
_GO_FLOAT = re.compile(r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
                       r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$")
_GO_BOOL = re.compile(r"^(?:y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE"
                      r"|on|On|ON|off|Off|OFF)$")
_BOOL_VALUES = {"y": True, "yes": True, "true": True, "on": True,
                "n": False, "no": False, "false": False, "off": False}
_INT_TAG = "tag:yaml.org,2002:int"
_FLOAT_TAG = "tag:yaml.org,2002:float"
_BOOL_TAG = "tag:yaml.org,2002:bool"

_SafeLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _GoYAMLLoader(_SafeLoader):  # type: ignore[misc]
    """PyYAML's safe loader with go-yaml v2's scalar rules and JSON-only results."""


_GoYAMLLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag not in (_INT_TAG, _FLOAT_TAG, _BOOL_TAG)]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
for _first in "yYnNtTfFoO":
    _GoYAMLLoader.add_implicit_resolver(_BOOL_TAG, _GO_BOOL, [_first])
for _first in "-+0123456789":
    _GoYAMLLoader.add_implicit_resolver(_INT_TAG, _GO_INT, [_first])
for _first in "-+.0123456789":
    _GoYAMLLoader.add_implicit_resolver(_FLOAT_TAG, _GO_FLOAT, [_first])


def _construct_bool(loader: Any, node: yaml.ScalarNode) -> Any:
    text = str(loader.construct_scalar(node))
    value = _BOOL_VALUES.get(text.lower())
    if value is None:
        raise DecodeError(f"yaml: cannot decode !!str `{text}` as a !!bool")
    return value


def _construct_int(loader: Any, node: yaml.ScalarNode) -> Any:
    text = str(loader.construct_scalar(node))
    plain = text.replace("_", "")
    digits = plain.lstrip("+-")
    try:
        if len(digits) > 1 and digits[0] == "0" and digits[1].isdigit():
            value = int(plain, 8)  # Go's base-0 parse reads a leading 0 as octal
        else:
            value = int(plain, 0)
    except ValueError:
        return _construct_float(loader, node) if _GO_FLOAT.match(text) else text
    if INT64_MIN <= value <= INT64_MAX:
        return value
    try:
        return float(value)  # beyond int64: float64, as the JSON decoder then reads it
    except OverflowError:
        return text  # no int64, uint64 or float64 holds it: go-yaml keeps the string


def _construct_float(loader: Any, node: yaml.ScalarNode) -> Any:
    text = str(loader.construct_scalar(node))
    lowered = text.lower()
    if lowered == ".nan":
        raise DecodeError("json: unsupported value: NaN")
    if lowered.lstrip("+-") == ".inf":
        raise DecodeError(f"json: unsupported value: {'-' if text.startswith('-') else '+'}Inf")
    try:
        value = float(text)
    except ValueError:
        return text
    if math.isinf(value):
        return text  # too large for float64: go-yaml keeps the string
    return value


def _construct_string(loader: Any, node: yaml.ScalarNode) -> Any:
    return loader.construct_scalar(node)


def _construct_binary(loader: Any, node: yaml.ScalarNode) -> Any:
    text = str(loader.construct_scalar(node))
    try:
        data = base64.b64decode("".join(text.split()), validate=True)
    except (binascii.Error, ValueError):
        raise DecodeError("yaml: !!binary value contains invalid base64 data") from None
    return data.decode("utf-8", "replace")


def _construct_mapping(loader: Any, node: yaml.MappingNode) -> Any:
    loader.flatten_mapping(node)
    result: dict[str, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        result[_key_string(key)] = loader.construct_object(value_node, deep=True)
    return result


def _construct_sequence(loader: Any, node: yaml.SequenceNode) -> Any:
    return loader.construct_sequence(node, deep=True)


def _construct_any(loader: Any, node: yaml.Node) -> Any:
    """A node with a tag nobody knows: go-yaml decodes it by its shape."""
    if isinstance(node, yaml.MappingNode):
        return _construct_mapping(loader, node)
    if isinstance(node, yaml.SequenceNode):
        return _construct_sequence(loader, node)
    return loader.construct_scalar(node)


def _key_string(key: Any) -> str:
    """A mapping key as the JSON key ``sigs.k8s.io/yaml`` makes of it."""
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, int):
        return str(key)
    if isinstance(key, float):
        return _go_float32_text(key)
    if key is None:
        raise DecodeError("unsupported map key of type: <nil>")
    raise DecodeError(f"yaml: invalid map key: {'[]interface {}' if isinstance(key, list) else 'map[string]interface {}'}")


def _go_float32_text(value: float) -> str:
    """``strconv.FormatFloat(value, 'g', -1, 32)``: the shortest digits that read back as
    the same float32, in exponent form when the exponent is below -4 or at least 6."""
    single = struct.unpack("f", struct.pack("f", value))[0] if abs(value) <= 3.4028234663852886e38 else value
    for precision in range(1, 10):
        text = f"{single:.{precision}e}"
        if struct.unpack("f", struct.pack("f", float(text)))[0] == single:
            break
    mantissa, exponent_text = text.split("e")
    exponent = int(exponent_text)
    mantissa = mantissa.rstrip("0").rstrip(".") if "." in mantissa else mantissa
    if exponent < -4 or exponent >= 6:
        return f"{mantissa}e{'-' if exponent < 0 else '+'}{abs(exponent):02d}"
    return f"{float(text):f}".rstrip("0").rstrip(".") if "." in f"{float(text):f}" else f"{float(text):f}"


_GoYAMLLoader.add_constructor(_BOOL_TAG, _construct_bool)
_GoYAMLLoader.add_constructor(_INT_TAG, _construct_int)
_GoYAMLLoader.add_constructor(_FLOAT_TAG, _construct_float)
_GoYAMLLoader.add_constructor("tag:yaml.org,2002:timestamp", _construct_string)
_GoYAMLLoader.add_constructor("tag:yaml.org,2002:binary", _construct_binary)
_GoYAMLLoader.add_constructor("tag:yaml.org,2002:map", _construct_mapping)
_GoYAMLLoader.add_constructor("tag:yaml.org,2002:set", _construct_mapping)
_GoYAMLLoader.add_constructor("tag:yaml.org,2002:seq", _construct_sequence)
_GoYAMLLoader.add_constructor("tag:yaml.org,2002:omap", _construct_sequence)
_GoYAMLLoader.add_constructor("tag:yaml.org,2002:pairs", _construct_sequence)
_GoYAMLLoader.add_constructor(None, _construct_any)


def yaml_value(body: bytes, what: str = "the object") -> Any:
    """``body`` (one YAML document) as a JSON value within the limits; raises ``DecodeError``.

    An empty document is ``None``.
    """
    loader = _GoYAMLLoader(body)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        aliased = b"*" in body and b"&" in body and _check_aliases(node)
        value = loader.construct_document(node)
    except yaml.YAMLError as exc:
        raise DecodeError(_yaml_error_text(exc)) from None
    except RecursionError:
        raise too_deep(what) from None
    finally:
        loader.dispose()
    check_depth(value, what)
    if aliased:
        # the constructor shares one value for every alias of an anchor; the server
        # changes objects in place (defaults), so each place gets its own copy
        value = orjson.loads(orjson.dumps(value))
    return value


def _yaml_error_text(exc: yaml.YAMLError) -> str:
    """A YAML error in go-yaml's shape: ``yaml: line N: problem``."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    if mark is not None:
        return f"yaml: line {mark.line + 1}: {problem}"
    return f"yaml: {problem}"


def _check_aliases(root: yaml.Node) -> bool:
    """Refuse excessive aliasing and self-containing anchors; True when aliases exist.

    Counts, on the composed graph (where an alias is a second reference to its anchor's
    node), what go-yaml's decoder counts while expanding it: every node visited, alias
    nodes and expansions included, and among them the visits made inside an alias
    expansion. Cost: O(distinct nodes), however large the expansion.
    """
    on_path: set[int] = {id(root)}
    seen: set[int] = {id(root)}
    alias_edges: set[tuple[int, int]] = set()
    alias_targets: list[yaml.Node] = []
    # document order: the first reference to a node defines it, later ones are aliases
    stack: list[tuple[yaml.Node, list[yaml.Node], int]] = [(root, _children(root), 0)]
    while stack:
        node, children, index = stack[-1]
        if index >= len(children):
            stack.pop()
            on_path.discard(id(node))
            continue
        stack[-1] = (node, children, index + 1)
        child = children[index]
        if id(child) in on_path:
            raise DecodeError(f"yaml: anchor '{getattr(child, 'anchor', None) or '?'}' value contains itself")
        if id(child) in seen:
            alias_edges.add((id(node), index))
            alias_targets.append(child)
            continue
        seen.add(id(child))
        on_path.add(id(child))
        stack.append((child, _children(child), 0))
    if not alias_targets:
        return False
    expanded = _expanded_sizes(root, alias_edges)
    decode_count = 1 + expanded[id(root)]  # the document node, then everything under it
    alias_count = sum(expanded[id(target)] for target in alias_targets)
    if alias_count > 100 and decode_count > 1000 and alias_count / decode_count > _allowed_alias_ratio(decode_count):
        raise DecodeError("yaml: document contains excessive aliasing")
    return True


def _expanded_sizes(root: yaml.Node, alias_edges: set[tuple[int, int]]) -> dict[int, int]:
    """Per node: the visits go-yaml makes decoding it with every alias expanded
    (the node itself, its children's, and one more per alias node among them)."""
    sizes: dict[int, int] = {}
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if key in sizes:
            continue
        children = _children(node)
        if children_done:
            sizes[key] = 1 + sum(sizes[id(child)] + ((key, index) in alias_edges)
                                 for index, child in enumerate(children))
            continue
        stack.append((node, True))
        stack.extend((child, False) for child in children if id(child) not in sizes)
    return sizes


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _allowed_alias_ratio(decode_count: int) -> float:
    if decode_count <= _ALIAS_RATIO_LOW:
        return 0.99
    if decode_count >= _ALIAS_RATIO_HIGH:
        return 0.10
    return 0.99 - 0.89 * (decode_count - _ALIAS_RATIO_LOW) / (_ALIAS_RATIO_HIGH - _ALIAS_RATIO_LOW)


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
            wrong = not isinstance(value, python_type) or (python_type is int and isinstance(value, bool))
            if name == "dryRun" and not wrong:
                wrong = not all(isinstance(item, str) for item in value)
            if wrong:
                raise _unmarshal_error(value, f"DeleteOptions.{name}", go_type)
            if name == "gracePeriodSeconds" and not INT64_MIN <= value <= INT64_MAX:
                raise DecodeError(f"json: cannot unmarshal number {value} into Go struct field "
                                  f"DeleteOptions.gracePeriodSeconds of type int64")
            if name == "preconditions":
                for field, field_type in _PRECONDITION_FIELDS.items():
                    if value.get(field) is not None and not isinstance(value[field], str):
                        raise _unmarshal_error(value[field], f"DeleteOptions.preconditions.{field}", field_type)
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
    return DecodeError(f"json: cannot unmarshal {unmarshal_kind(value)} into Go struct field {field} of type {go_type}")
