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
  ``sigs.k8s.io/yaml``) leave them: integers outside int64 become float64; a YAML
  float is what Go's JSON text of it reads back as (``1.0`` → 1, ``gonumbers``); a JSON
  float stays one (a custom resource's are put in stored form when it is stored, if
  ``may_hold_floats`` says the request brought any); YAML's
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
- **Off the event loop**: a body longer than ``OFFLOAD_BYTES`` (64 KiB) is decoded in a
  worker thread before the request's synchronous code runs (``predecode``), so a slow
  decode (YAML, or JSON whose keys repeat) of a big body never stalls the other
  requests; the answer is the same, whichever side decoded it.
"""

from __future__ import annotations

import asyncio
import json
import re
from contextvars import ContextVar, Token
from dataclasses import dataclass, field
from typing import Any

import orjson
import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from kubewerk.apiserver.querystring import query_flag
from kubewerk.core import gonumbers, yamlgo
from kubewerk.core.gofmt import go_float_v, go_quote, unmarshal_kind

MAX_BODY_BYTES = 3 * 1024 * 1024
MAX_DEPTH = 100

OFFLOAD_BYTES = 64 * 1024
"""A request body longer than this is decoded in a worker thread (``predecode``), not on
the event loop. Measured on 2 cores: a 64 KiB body takes at most about 13 ms to decode as
YAML and 10 ms as JSON whose keys repeat (the slow paths; plain JSON 0.3 ms), a 2.4 MB
one 1.3 s and 1.4 s; the thread hop costs about 0.1 ms, against a body that size's
decode and admission, while the small bodies of the hot path pay only a length test."""

INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1

# orjson writes at most this many nested containers
_ENCODER_DEPTH = 254

# a body's text reduced to what its numbers are made of: digits as 0, '.', 'e' and 'E' as '.'
_NUMBER_TEXT = bytes(
    0x30 if 0x30 <= i <= 0x39 else 0x2E if i in b".eE" else 0x20 for i in range(256)
)
_LONG_DIGIT_RUN = b"0" * 19  # the shortest decimal integer outside int64 has 19 digits
_FRACTION_OR_EXPONENT = b"0."  # a digit then '.', 'e' or 'E': how every JSON float is written


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

    Keys repeated in an object keep their last value; they are found (exactly, see
    ``json_duplicates``) and kept for ``body_duplicates(value)``, which the REST layer
    reports per ``fieldValidation``.

    A body ``predecode`` decoded in a worker thread (this very object, as JSON, for the
    same ``what``) is not decoded again: its value (or error) is taken from there, the
    value itself by the first caller and a fresh copy by any later one.

    Cost on a small body: one ``orjson.loads``, one ``orjson.dumps`` and four byte scans;
    the depth is walked only when the body holds more than ``MAX_DEPTH`` brackets, the
    integers only when it holds a run of 19 digits, the keys one by one only when a key
    may repeat.
    """
    handed = _handed_off(body, False, what) if len(body) > OFFLOAD_BYTES else None
    value, duplicates, floats = handed if handed is not None else _json_decode(body, what)
    if floats:
        _FLOATS.set(True)
    if duplicates.found:
        _DECODED.set(_Found(value, duplicates))
    return value


def _json_decode(body: bytes, what: str) -> tuple[Any, Duplicates, bool]:
    """``json_value``'s decoding, without the request context: the value, the body's
    duplicate fields (``_NO_DUPLICATES`` when no key can repeat) and whether the value
    may hold a float (the text has a digit followed by ``.``/``e``/``E``, or an integer
    outside int64, which becomes one)."""
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
    numbers = body.translate(_NUMBER_TEXT)
    floats = numbers.find(_FRACTION_OR_EXPONENT) != -1
    if numbers.find(_LONG_DIGIT_RUN) != -1:
        value = _int64_or_float(value)
        floats = True
    # json_duplicates' exact test: this is every create's and update's path
    kind = type(value)
    if (kind is dict or kind is list) and _may_repeat(body, orjson.dumps(value)):
        return value, _find_duplicates(body), floats
    return value, _NO_DUPLICATES, floats


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


# -- duplicate fields -------------------------------------------------------------------

MAX_STRICT_ERRORS = 100
"""sigs.k8s.io/json keeps at most this many strict errors of one body."""


@dataclass(slots=True)
class Duplicates:
    """The duplicate fields of a JSON body, as ``sigs.k8s.io/json``'s strict decoding
    finds them: ``found`` holds (order, path) per repeated key, in the order the decoder
    meets them (a key's second occurrence, before its value is read; ``order`` counts the
    keys of the text), each path once; ``tree`` is the text's objects as lists of
    (key, value) pairs, from which the order of an unknown field's first occurrence is
    found when errors of both kinds are put in one list. Paths are the decoder's: keys
    joined by ``.``, list indices as ``[i]`` (``spec.ports[0].name``)."""

    found: list[tuple[int, str]]
    tree: Any = None
    leading: list[str] = field(default_factory=list)
    """Errors reported before all others (those of a patch body, when this describes
    the object a patch made)."""
    yaml_lines: list[str] = field(default_factory=list)
    """A YAML body's repeated keys as go-yaml's strict decoder words them (``line 5: key
    "name" already set in map``): one error together (``yaml: unmarshal errors:`` and
    the lines), one warning each."""
    sorted_unknown: bool = False
    """kube-apiserver decodes a text with sorted keys, not the body as sent (a YAML body
    converted to JSON, a patched object re-encoded from a map), so a typed kind's
    unknown fields come in key order."""

    def __bool__(self) -> bool:
        return bool(self.found or self.leading or self.yaml_lines)

    def yaml_error(self) -> str:
        """go-yaml's ``yaml.TypeError`` text of ``yaml_lines``."""
        return "yaml: unmarshal errors:\n  " + "\n  ".join(self.yaml_lines)

    def report(self, unknown: list[str], typed: bool, strict: bool) -> list[str]:
        """What kube-apiserver reports for this body with these unknown fields: the
        items of its ``strict decoding error`` (``strict``) or its warnings."""
        if self.sorted_unknown and typed:
            unknown = sorted(unknown, key=_path_key)
        messages = self.with_unknown(unknown, typed)
        if not self.yaml_lines:
            return messages
        return ([self.yaml_error()] if strict else self.yaml_lines) + messages

    def messages(self, prefix: str = "") -> list[str]:
        """Kube's error texts: ``duplicate field "spec.replicas"`` (each after ``prefix``)."""
        return [
            *self.leading,
            *(f"{prefix}duplicate field {go_quote(path)}" for _, path in self.found),
        ]

    def with_unknown(self, unknown: list[str], typed: bool) -> list[str]:
        """The strict decoding errors of a body with these duplicates and ``unknown``
        fields (paths), in kube's order. ``typed`` (a built-in kind, decoded into its Go
        struct in one pass): both kinds interleaved in document order, an unknown field
        at its first occurrence, and no duplicate reported for a field that is itself
        unknown or inside one (the struct decoder skips those values). Else (a custom
        resource, decoded into a map and then pruned): every duplicate, then the unknown
        fields in the order given."""
        unknown_messages = [f"unknown field {go_quote(path)}" for path in unknown]
        if not typed:
            return self.messages() + unknown_messages
        skipped = tuple(unknown)
        entries: list[tuple[int, int, str]] = []
        for order, path in self.found:
            if skipped and any(
                path == top or path.startswith((top + ".", top + "[")) for top in skipped
            ):
                continue
            entries.append((order, 1, f"duplicate field {go_quote(path)}"))
        first = _first_orders(self.tree, set(unknown)) if entries else {}
        for path, message in zip(unknown, unknown_messages, strict=True):
            entries.append((first.get(path, -1), 0, message))
        entries.sort(key=lambda entry: (entry[0], entry[1]))
        return self.leading + [message for _, _, message in entries][:MAX_STRICT_ERRORS]


_NO_DUPLICATES = Duplicates([])
_YAML_CLEAN = Duplicates([], sorted_unknown=True)  # shared: never changed by its readers

_PATH_PART = re.compile(r"\[(\d+)\]|\.?([^.\[]+)")


def _path_key(path: str) -> list[tuple[int, int | str]]:
    """A decoder path (``spec.ports[0].name``) as a sort key: keys in byte order, list
    indices in number order, a parent before its children."""
    return [(0, int(index)) if index else (1, key) for index, key in _PATH_PART.findall(path)]


@dataclass(slots=True)
class _Found:
    """A decoded body and its duplicate fields, kept for ``body_duplicates`` in the
    request's context until ``forget`` empties it."""

    value: Any
    duplicates: Duplicates | None


_DECODED: ContextVar[_Found | None] = ContextVar("kubewerk_decoded_duplicates", default=None)


def body_duplicates(value: Any) -> Duplicates | None:
    """The duplicate fields ``json_value`` found in the body it decoded as ``value`` (this
    very object), in the current request's context; None when it found none. Kept for
    the newest decoded body with duplicates only, with a reference to it, so an identity
    test cannot match another object, until the request ends (``forget``)."""
    found = _DECODED.get()
    if found is None or found.value is not value:
        return None
    return found.duplicates


_FLOATS: ContextVar[bool] = ContextVar("kubewerk_decoded_floats", default=False)


def may_hold_floats() -> bool:
    """Whether a value this request decoded may hold a float: a body read by
    ``json_value``/``yaml_value`` whose text has a digit followed by ``.``, ``e`` or ``E``
    (or an integer outside int64, which becomes one), or a value ``check_depth`` checked
    (a webhook's patch, a converted object, a patch result: no body scan saw those). A
    patch result can only hold a float its patch body's text (scanned) or the stored
    object (already in stored form) held. Nothing else brings floats into a write: the
    server's own writes change stored objects. The storage hook of custom resources
    (``gonumbers.as_stored``) walks an object only when this is True, so a create
    without floats pays one ``ContextVar.get`` there and nothing when it is decoded.

    The mark is set in the context of the code that found the float; the decoders run
    on the event loop before a request's work moves to a worker thread (whose context is
    a copy made then), so the storage hook sees it there too. One ``check_depth`` runs in
    a worker thread of its own, whose mark the request does not see: a mutating
    webhook's patch of 1,000 operations or more (``webhooks.apply_patch_async``); a float
    such a patch adds is stored as orjson writes it. ``forget`` clears the mark."""
    return _FLOATS.get()


def forget() -> None:
    """Drop what the decoders kept of the current request's body for ``body_duplicates``
    (the body's value and its duplicate fields, as big as the body), at the end of the
    request: in its context and in every copy of it made since (a task or callback the
    request started holds one for as long as it lives: a watch, a timer, a webhook's
    keep-alive connection), so none of them keeps the body alive or matches it; and the
    request's float mark (``may_hold_floats``), in its own context. Cheap when nothing
    was kept: two ``ContextVar.get``."""
    found = _DECODED.get()
    if found is not None:
        found.value = found.duplicates = None
        _DECODED.set(None)
    if _FLOATS.get():
        _FLOATS.set(False)


_PATCH_OP_FIELDS = frozenset(("op", "path", "from", "value"))


def json_patch_errors(body: bytes, ops: Any) -> list[str]:
    """The strict decoding errors of a JSON patch body as kube-apiserver reports them
    (decoding into its ``[]jsonPatchOp`` struct: ``op``, ``path``, ``from``, ``value``):
    ``json patch unknown field "[0].foo"`` for any other member of an operation (at its
    first occurrence), ``json patch duplicate field "[1].path"`` for a repeated member
    (or a repeated key inside a ``value``), in document order. Repeats of an unknown
    member, and anything inside one, are not reported (the struct decoder skips it)."""
    if type(ops) is not list:
        return []
    duplicates = json_duplicates(body, ops)
    unknown: list[str] = []
    for index, op in enumerate(ops):
        if type(op) is dict:
            unknown += [f"[{index}].{key}" for key in op if key not in _PATCH_OP_FIELDS]
    if not duplicates and not unknown:
        return []
    return ["json patch " + message for message in duplicates.with_unknown(unknown, typed=True)]


def json_duplicates(body: bytes, value: Any) -> Duplicates:
    """The duplicate fields of JSON ``body``, which ``json_value`` decoded as ``value``.

    Exact and cheap when there are none: a JSON text holds one ``:`` per key plus those
    inside its strings; ``orjson`` writes ``value`` back with one ``:`` per key it kept
    plus those inside the strings it kept, and never escapes a ``:``. A repeated key
    drops at least itself (its ``:``) from what is kept, so the two counts are equal
    exactly when no key repeats, unless an escape (``\\u003a``) wrote a ``:`` the text
    does not show, in which case the body is parsed again. Only then, or when the counts
    differ, is the body walked key by key (``_find_duplicates``). A body that is the very
    text ``orjson`` writes back (compact, as Go's encoder writes it) is not even counted,
    and a value whose repeats ``json_value`` found already (``body_duplicates``) is
    answered with them.

    Cost when nothing repeats: one ``orjson.dumps`` of the value and a comparison, two
    byte counts more when the text differs (about 4,000 and 7,000 instructions on the
    demo Database, whose create takes about 550,000)."""
    if type(value) is not dict and type(value) is not list:
        return _NO_DUPLICATES
    found = body_duplicates(value)
    if found is not None:  # json_value decoded this very value and found them: not again
        return found
    if len(body) > OFFLOAD_BYTES:
        handed = _HANDOFF.get()
        if handed is not None and handed.body is body and not handed.as_yaml and handed.ok:
            # found from this very body in the worker thread: the same list
            assert handed.duplicates is not None
            return handed.duplicates
    if not _may_repeat(body, orjson.dumps(value)):
        return _NO_DUPLICATES
    return _find_duplicates(body)


def _may_repeat(body: bytes, written: bytes) -> bool:
    """False when JSON ``body``, decoded and written back by ``orjson`` as ``written``,
    certainly repeats no key (see ``json_duplicates``): the same text (a compact body as
    Go's and orjson's encoders write it: a repeat would have been dropped), or as many
    ``:`` in both and no escape that could write a ``:``. ``bytes.find``, not ``in``:
    ``in`` first tries its operand as an integer, and the TypeError costs more than the
    search."""
    return body != written and (
        body.count(b":") != written.count(b":")
        or (body.find(b"\\") != -1 and body.find(b"\\u003") != -1)
    )


def _find_duplicates(body: bytes) -> Duplicates:
    """Every repeated key of ``body`` (already known to be valid JSON within the limits),
    in the order a streaming decoder meets them. Python's parser keeps each object as the
    list of its (key, value) pairs, repeats included (a JSON array is a list of values,
    never of tuples); a path is only put together for a repeated key."""
    tree = json.loads(
        body, object_pairs_hook=list, parse_float=str, parse_int=str, parse_constant=str
    )
    found: list[tuple[int, str]] = []
    if type(tree) is list and tree:
        _scan(tree, [], 0, found, set())
    return Duplicates(found, tree)


def _is_object(node: list[Any]) -> bool:
    return type(node[0]) is tuple


def _scan(
    node: list[Any],
    segments: list[str | int],
    order: int,
    found: list[tuple[int, str]],
    reported: set[str],
) -> int:
    """Walk ``node`` (a non-empty object or array, at ``segments``) in document order,
    numbering every key; returns the last number. Recursion is bounded by ``MAX_DEPTH``."""
    if _is_object(node):
        seen: set[str] = set()
        for key, item in node:
            order += 1
            if key in seen:
                path = _joined(segments, key)
                if path not in reported and len(found) < MAX_STRICT_ERRORS:
                    reported.add(path)
                    found.append((order, path))
            else:
                seen.add(key)
            if type(item) is list and item:
                segments.append(key)
                order = _scan(item, segments, order, found, reported)
                segments.pop()
    else:
        for index, item in enumerate(node):
            if type(item) is list and item:
                segments.append(index)
                order = _scan(item, segments, order, found, reported)
                segments.pop()
    return order


def _joined(segments: list[str | int], key: str | int) -> str:
    """The decoder's path of ``key`` under ``segments``."""
    path = ""
    for segment in [*segments, key]:
        if type(segment) is int:
            path += f"[{segment}]"
        else:
            path += f".{segment}" if path else str(segment)
    return path


def _first_orders(tree: Any, wanted: set[str]) -> dict[str, int]:
    """The order (as ``_scan`` numbers keys) of the first occurrence of each ``wanted``
    path in ``tree``; paths are put together only along the way to a wanted one."""
    prefixes = {""}
    for path in wanted:
        prefixes.update(path[:i] for i, ch in enumerate(path) if ch in ".[")
    orders: dict[str, int] = {}
    if type(tree) is list and tree:
        _number(tree, "", 0, wanted, prefixes, orders)
    return orders


def _number(
    node: list[Any],
    path: str | None,
    order: int,
    wanted: set[str],
    prefixes: set[str],
    orders: dict[str, int],
) -> int:
    if _is_object(node):
        for key, item in node:
            order += 1
            child = None
            if path is not None:
                child = f"{path}.{key}" if path else key
                if child in wanted and child not in orders:
                    orders[child] = order
                if child not in prefixes:
                    child = None
            if type(item) is list and item:
                order = _number(item, child, order, wanted, prefixes, orders)
    else:
        for index, item in enumerate(node):
            if type(item) is list and item:
                child = f"{path}[{index}]" if path is not None else None
                if child is not None and child not in prefixes:
                    child = None
                order = _number(item, child, order, wanted, prefixes, orders)
    return order


# -- depth ------------------------------------------------------------------------------


def check_depth(value: Any, what: str = "the object") -> None:
    """Raise ``TooDeep`` when ``value`` nests more than ``MAX_DEPTH`` containers.

    A value checked here may hold floats that no body scan saw (a patch result, a
    webhook's patch, a converted object): the request is marked so (``may_hold_floats``).

    The encoder does the walk (it stops at its own limit): ``value`` wrapped in enough
    lists that it encodes only if its own depth is within ``MAX_DEPTH``.
    """
    if not _FLOATS.get():
        _FLOATS.set(True)
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

    A repeated key keeps its last value; the repeats are kept for
    ``body_duplicates(value)`` as go-yaml's strict decoder words them
    (``yaml_duplicate_lines``), with the note that kube decodes the YAML's sorted JSON.

    A body ``predecode`` decoded in a worker thread is taken from there, as for
    ``json_value``.
    """
    handed = _handed_off(body, True, what) if len(body) > OFFLOAD_BYTES else None
    value, found, floats = handed if handed is not None else _yaml_decode(body, what)
    if floats:
        _FLOATS.set(True)
    if found is not None:
        _DECODED.set(_Found(value, found))
    return value


def _yaml_decode(body: bytes, what: str) -> tuple[Any, Duplicates | None, bool]:
    """``yaml_value``'s decoding, without the request context: the value, what
    ``body_duplicates`` gives for it (None for a scalar or an empty document) and whether
    the value may hold a float.

    Numbers come out as kube-apiserver reads a YAML body (``sigs.k8s.io/yaml``'s
    ``YAMLToJSON``, then its JSON decoder): go-yaml's float64 is written as Go writes it
    and read back, so an integral one whose text fits int64 is an integer (``1.0`` → 1,
    for built-in kinds too: ``replicas: 1.0`` is an int32's 1)."""
    value = _plain_json_object(body)
    if value is not _NOT_PLAIN:
        # as json_value: no deeper than the brackets the text holds
        if body.count(b"{") + body.count(b"[") > MAX_DEPTH:
            check_depth(value, what)
        return value, _YAML_CLEAN, False  # no floats: _plain_json_object refuses them
    try:
        node = yamlgo.compose_document(body)
        if node is None:
            return None, None, False
        if b"*" in body and b"&" in body:
            yamlgo.check_aliases(node)
        lines = yaml_duplicate_lines(node)
        value = yamlgo.node_value(node)
    except yaml.YAMLError as exc:
        raise DecodeError(yamlgo.go_error_text(exc)) from None
    except yamlgo.GoYAMLError as exc:
        raise DecodeError(str(exc)) from None
    except RecursionError:
        raise too_deep(what) from None
    check_depth(value, what)
    value = gonumbers.as_stored(value, int64_only=True)
    if type(value) is dict or type(value) is list:
        return (
            value,
            Duplicates([], yaml_lines=lines, sorted_unknown=True) if lines else _YAML_CLEAN,
            True,
        )
    return value, None, type(value) is float


# -- decoding off the event loop --------------------------------------------------------


@dataclass(slots=True)
class _Predecoded:
    """A body decoded in a worker thread, for the request's synchronous decoders. The
    value goes to the first of them (``taken``); a later one gets a copy decoded from
    ``encoded`` (the value's own JSON, made in the thread), so no two consumers share
    mutable state. ``duplicates`` is never changed by its readers. Held by the request's
    context only (``release`` empties it)."""

    body: bytes | None  # None once released
    as_yaml: bool
    what: str
    value: Any = None
    duplicates: Duplicates | None = None
    floats: bool = False
    error: DecodeError | None = None
    encoded: bytes = b""
    taken: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None


_HANDOFF: ContextVar[_Predecoded | None] = ContextVar("kubewerk_predecoded", default=None)


def _decoded_in_thread(body: bytes, as_yaml: bool, what: str) -> _Predecoded:
    """The worker thread's part of ``predecode``: the decoders' result, or their error."""
    done = _Predecoded(body, as_yaml, what)
    try:
        done.value, done.duplicates, done.floats = (
            _yaml_decode(body, what) if as_yaml else _json_decode(body, what)
        )
    except DecodeError as exc:
        done.error = exc
        return done
    # a decoded value is always JSON within the limits (check_depth wrote it)
    done.encoded = orjson.dumps(done.value)
    return done


async def predecode(body: bytes, as_yaml: bool, what: str) -> Token[_Predecoded | None] | None:
    """Decode ``body`` (as YAML when ``as_yaml``, else JSON; ``what`` as the decoders name
    it in errors) in a worker thread when it is longer than ``OFFLOAD_BYTES``, so the
    event loop serves other requests meanwhile, and hand the result to this request's
    ``json_value``/``yaml_value``/``json_duplicates`` of this very body object: they
    then answer exactly as if they had decoded it themselves (the same value, the same
    duplicate fields, the same ``DecodeError``), without decoding again. Returns the
    token for ``release`` (None for a body decoded where it is used, on the loop).

    The thread runs in a copy of the request's context; the result is carried back to
    the request's own context here, so ``body_duplicates`` sees what it found."""
    if len(body) <= OFFLOAD_BYTES:
        return None
    done = await asyncio.to_thread(_decoded_in_thread, body, as_yaml, what)
    return _HANDOFF.set(done)


def release(token: Token[_Predecoded | None]) -> None:
    """Forget what ``predecode`` handed over (at the end of its request), everywhere: a
    task or callback the request started holds a copy of its context, and with it the
    hand-off, for as long as it lives (a watch, a timer); the hand-off is emptied, so
    those copies keep no body or value alive and match no body. What the decoders kept
    of the body for ``body_duplicates`` goes with it (``forget``)."""
    forget()
    done = _HANDOFF.get()
    if done is not None:
        done.body = None
        done.value = done.duplicates = done.error = None
        done.encoded = b""
    _HANDOFF.reset(token)


def _handed_off(body: bytes, as_yaml: bool, what: str) -> tuple[Any, Any, bool] | None:
    """What ``predecode`` decoded of this very ``body`` the same way: (value, duplicates,
    floats) as the decoder returns them, or its ``DecodeError`` raised again (a new one, the
    same type and text); None when it did not decode this body."""
    done = _HANDOFF.get()
    if done is None or done.body is not body or done.as_yaml is not as_yaml or done.what != what:
        return None
    if done.error is not None:
        raise type(done.error)(*done.error.args)
    if done.taken:
        return orjson.loads(done.encoded), done.duplicates, done.floats
    done.taken = True
    value, done.value = done.value, None
    return value, done.duplicates, done.floats


def yaml_duplicate_lines(root: Node) -> list[str]:
    """The repeated keys of a composed YAML document as go-yaml v2's strict decoder
    (``yaml.UnmarshalStrict`` into ``interface{}``, what ``sigs.k8s.io/yaml``'s strict
    conversion runs) reports them, in its order: ``line N: key "k" already set in map``,
    N the line of the repeated key's value, after any error inside that value. Keys
    are equal as Go values (``1`` and ``"1"`` differ); merged keys (``<<``) count as set
    (a key set before or after a merge of the same key is reported, at the line of the
    later value); an alias's target is walked at each use, as go-yaml decodes it again.
    Call it on a document ``check_aliases`` accepted and within ``MAX_DEPTH``."""
    lines: list[str] = []
    _yaml_node(root, lines)
    return lines


_YAML_MERGE = "tag:yaml.org,2002:merge"
_YAML_STR = "tag:yaml.org,2002:str"


def _yaml_node(node: Node, lines: list[str], into: dict[Any, None] | None = None) -> None:
    if isinstance(node, MappingNode):
        seen: dict[Any, None] = {} if into is None else into
        for key_node, value_node in node.value:
            if key_node.tag == _YAML_MERGE:
                _yaml_merge(value_node, lines, seen)
                continue
            key = _yaml_key(key_node)
            _yaml_node(value_node, lines)
            if key is None:
                continue
            if key in seen:
                line = value_node.start_mark.line + 1
                lines.append(f"line {line}: key {_go_sharp_v(key[1])} already set in map")
            else:
                seen[key] = None
    elif isinstance(node, SequenceNode):
        for item in node.value:
            _yaml_node(item, lines)


def _yaml_merge(node: Node, lines: list[str], seen: dict[Any, None]) -> None:
    """A ``<<`` value merged into the mapping whose keys are ``seen``: a mapping (or an
    alias of one), or a sequence of them, the last first (go-yaml's order)."""
    if isinstance(node, SequenceNode):
        for item in reversed(node.value):
            _yaml_node(item, lines, seen)
    else:
        _yaml_node(node, lines, seen)


def _yaml_key(node: Node) -> tuple[str, Any] | None:
    """A mapping key as the Go value go-yaml makes of it, with its type (so ``1``, ``1.0``,
    ``true`` and ``"1"`` differ); None for one that never equals another (NaN, or what
    go-yaml refuses as a key, which the value's own decoding reports)."""
    if isinstance(node, ScalarNode) and node.tag == _YAML_STR:
        return ("string", node.value)
    if not isinstance(node, ScalarNode):
        return None
    try:
        value = yamlgo.node_value(node)
    except (yamlgo.GoYAMLError, yaml.YAMLError):
        return None
    if isinstance(value, float) and value != value:
        return None
    return (type(value).__name__, value)


def _go_sharp_v(key: Any) -> str:
    """``fmt.Sprintf("%#v", key)`` for a YAML key's Go value."""
    if key is None:
        return "<nil>"
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, str):
        return go_quote(key)
    if isinstance(key, float):
        return go_float_v(key)
    return str(key)


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
        options["orphanDependents"] = query_flag(query, "orphanDependents")
    if "propagationPolicy" in query:
        options["propagationPolicy"] = query["propagationPolicy"]
    return options


def _unmarshal_error(value: Any, field: str, go_type: str) -> DecodeError:
    return DecodeError(
        f"json: cannot unmarshal {unmarshal_kind(value)} "
        f"into Go struct field {field} of type {go_type}"
    )
