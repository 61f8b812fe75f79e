"""Kubernetes protobuf request bodies, decoded into the JSON the JSON path would see.

Clients such as ``kubectl`` (1.32+) and client-go operators send built-in kinds as
``application/vnd.kubernetes.protobuf``: the 4 bytes ``k8s\\x00`` followed by a
``runtime.Unknown`` message whose ``typeMeta`` names the kind and whose ``raw`` holds the
object's own message. This module has

- a strict protobuf wire-format reader (varint, 64-bit, length-delimited, 32-bit, and
  groups, which are skipped as unknown fields); truncated or malformed input raises
  ``ProtobufError`` whose text is the one Go's generated (gogo) unmarshalers give
  (``unexpected EOF``, ``proto: integer overflow``, ``proto: wrong wireType = 0 for field
  Name`` ...);
- tables of the messages kubewerk serves with a body (field numbers, types and JSON names
  from ``k8s.io/api`` and ``k8s.io/apimachinery``'s ``generated.proto`` and ``types.go``):
  core/v1 ConfigMap, Secret, Namespace, ServiceAccount, Event; events.k8s.io/v1 Event;
  coordination.k8s.io/v1 Lease; meta/v1 DeleteOptions;
- ``decode_object`` / ``decode_delete_options``, which turn a body into the JSON object
  Go's ``encoding/json`` would write for the decoded Go struct, i.e. exactly what the
  same client sends when it is configured for JSON: fields tagged ``omitempty`` are left
  out when zero, pointer fields are present exactly when they were on the wire (so a
  present empty string stays ``""``), struct fields are always present (``"spec": {}``),
  ``bytes`` become base64 text, ``Time`` RFC 3339 text in seconds (``null`` when zero, as
  Go writes it), ``MicroTime`` RFC 3339 text with 6 fractional digits.

Everything else (custom resources, other kinds) is for the caller to refuse.
"""

from __future__ import annotations

import base64
import datetime
import functools
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from kubewerk.core.errors import ApiError
from kubewerk.core.gvk import format_api_version, split_api_version

JSON = dict[str, Any]

MAGIC = b"k8s\x00"
MEDIA_TYPE = "application/vnd.kubernetes.protobuf"

# wire types
VARINT, FIXED64, LEN, START_GROUP, END_GROUP, FIXED32 = 0, 1, 2, 3, 4, 5

_U64 = (1 << 64) - 1
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
_GO_ZERO_TIME_SECONDS = -62135596800  # time.Time{} (0001-01-01T00:00:00Z) as Unix seconds


class ProtobufError(ValueError):
    """Malformed protobuf data; ``str()`` is the message Go's unmarshaler gives."""


ERR_EOF = "unexpected EOF"
ERR_OVERFLOW = "proto: integer overflow"
ERR_NEGATIVE_LENGTH = "proto: negative length found during unmarshaling"
ERR_END_OF_GROUP = "proto: unexpected end of group"


# -- the wire format -----------------------------------------------------------------


def read_varint(data: bytes, pos: int, end: int) -> tuple[int, int]:
    """The unsigned varint at ``pos`` (< ``end``) and the position after it.

    Up to 10 bytes, as Go reads them: bits beyond 64 are dropped; an 11th byte raises
    ``proto: integer overflow``; running into ``end`` raises ``unexpected EOF``.
    """
    value = 0
    shift = 0
    while True:
        if shift >= 64:
            raise ProtobufError(ERR_OVERFLOW)
        if pos >= end:
            raise ProtobufError(ERR_EOF)
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value & _U64, pos
        shift += 7


def _as_int64(value: int) -> int:
    value &= _U64
    return value - (1 << 64) if value >= 1 << 63 else value


def _as_int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def read_length(data: bytes, pos: int, end: int) -> tuple[int, int]:
    """A length-delimited field's payload bounds ``(start, stop)`` after its tag.

    The length is a varint read as Go's ``int``: a negative one raises
    ``proto: negative length found during unmarshaling``, one past ``end`` raises
    ``unexpected EOF``.
    """
    length, pos = read_varint(data, pos, end)
    length = _as_int64(length)
    if length < 0:
        raise ProtobufError(ERR_NEGATIVE_LENGTH)
    stop = pos + length
    if stop > end:
        raise ProtobufError(ERR_EOF)
    return pos, stop


def skip_field(data: bytes, pos: int, end: int, wire: int) -> int:
    """The position after an unknown field's value (its tag already read).

    Every wire type is skipped as proto decoding does, groups (3 ... 4) with their nested
    fields; wire types 6 and 7 raise ``proto: illegal wireType N``, a stray end-group
    ``proto: unexpected end of group``.
    """
    depth = 0
    while True:
        if wire == VARINT:
            _, pos = read_varint(data, pos, end)
        elif wire == FIXED64:
            if pos + 8 > end:
                raise ProtobufError(ERR_EOF)
            pos += 8
        elif wire == LEN:
            _, pos = read_length(data, pos, end)
        elif wire == FIXED32:
            if pos + 4 > end:
                raise ProtobufError(ERR_EOF)
            pos += 4
        elif wire == START_GROUP:
            depth += 1
        elif wire == END_GROUP:
            if depth == 0:
                raise ProtobufError(ERR_END_OF_GROUP)
            depth -= 1
        else:
            raise ProtobufError(f"proto: illegal wireType {wire}")
        if depth == 0:
            return pos
        tag, pos = read_varint(data, pos, end)
        wire = tag & 7


# -- message tables -----------------------------------------------------------------
#
# Field kinds: string, bytes, bool, int32, int64, message (``message`` names the table),
# map_str (map<string,string>), map_bytes (map<string,bytes>), map_msg (map<string,M>,
# ``message`` names M), and the messages with a JSON form of their own (a custom
# MarshalJSON in Go): time, microtime, fieldsv1, quantity, intorstring, rawextension.
# JSON modes (from the Go struct tags):
#   omitempty  value field with ``omitempty``: left out when zero (structs and Time are
#              never left out by encoding/json: ``{}`` / ``null``)
#   omitzero   left out when zero (ObjectMeta.creationTimestamp)
#   always     no ``omitempty``: written even when zero (nil slices and maps as null)
#   pointer    Go pointer with ``omitempty``: written exactly when it was on the wire
#   nullable   Go pointer without ``omitempty``: its value when on the wire, else null
#   inline     an embedded struct with no JSON name: its fields are written in its place

_SPECIAL_KINDS = frozenset(
    ("time", "microtime", "fieldsv1", "quantity", "intorstring", "rawextension")
)


@dataclass(frozen=True, slots=True)
class Field:
    """One field of a message: its JSON name, wire kind and Go JSON behaviour."""

    name: str
    kind: str
    mode: str = "omitempty"
    message: str = ""
    repeated: bool = False
    go_name: str = ""

    @property
    def wire(self) -> int:
        return VARINT if self.kind in ("bool", "int32", "int64") else LEN

    @property
    def go(self) -> str:
        return self.go_name or self.name[:1].upper() + self.name[1:]


@dataclass(frozen=True, slots=True)
class Message:
    """A message: its Go type name (for error texts) and fields in Go struct order."""

    name: str
    fields: tuple[tuple[int, Field], ...]

    def by_number(self) -> dict[int, Field]:
        return dict(self.fields)


def _string_field(name: str, mode: str = "omitempty", go: str = "") -> Field:
    return Field(name, "string", mode, go_name=go)


def _message_field(name: str, message: str, mode: str = "always", go: str = "") -> Field:
    return Field(name, "message", mode, message=message, go_name=go)


# The envelope and the messages with their own JSON form, written by hand: their Go
# unmarshalers are these (Time and MicroTime unmarshal a ``Timestamp``).
_WIRE_MESSAGES: dict[str, Message] = {
    m.name: m
    for m in (
        # k8s.io/apimachinery/pkg/runtime
        Message(
            "Unknown",
            (
                (1, _message_field("typeMeta", "TypeMeta")),
                (2, Field("raw", "bytes", "always")),
                (3, _string_field("contentEncoding", "always")),
                (4, _string_field("contentType", "always")),
            ),
        ),
        Message(
            "TypeMeta",
            ((1, _string_field("apiVersion", go="APIVersion")), (2, _string_field("kind"))),
        ),
        Message("RawExtension", ((1, Field("raw", "bytes", "always", go_name="Raw")),)),
        # k8s.io/apimachinery/pkg/apis/meta/v1
        Message(
            "Timestamp",
            ((1, Field("seconds", "int64", "always")), (2, Field("nanos", "int32", "always"))),
        ),
        Message("FieldsV1", ((1, Field("Raw", "bytes", "always")),)),
        # k8s.io/apimachinery/pkg/api/resource
        Message("Quantity", ((1, _string_field("string", "always", go="String_")),)),
        # k8s.io/apimachinery/pkg/util/intstr
        Message(
            "IntOrString",
            (
                (1, Field("type", "int64", "always")),
                (2, Field("intVal", "int32", "always")),
                (3, _string_field("strVal", "always")),
            ),
        ),
    )
}
MESSAGES = _WIRE_MESSAGES  # the hand-written tables (the generated ones load on first use)

_DATA_FILE = Path(__file__).with_name("protodata") / "messages.json"
_API = "k8s.io.api."
_META_V1 = "k8s.io.apimachinery.pkg.apis.meta.v1."


@functools.cache
def _generated() -> dict[str, Any]:
    """``protodata/messages.json`` (generated by scripts/vendor_k8s_proto.py), read once."""
    data: dict[str, Any] = orjson.loads(_DATA_FILE.read_bytes())
    return data


@functools.cache
def _by_short_name() -> dict[str, list[str]]:
    names: dict[str, list[str]] = {}
    for full in _generated()["messages"]:
        names.setdefault(full.rpartition(".")[2], []).append(full)
    return names


def _full_name(name: str) -> str:
    """The generated table's key for ``name``: a full protobuf name as it is; a message's
    own name (``Pod``, ``ObjectMeta``, ``LeaseSpec``) for core/v1's, else meta/v1's, else
    the one package's that has it; ``events.Event`` for ``k8s.io.api.events.v1.Event``."""
    messages = _generated()["messages"]
    if name in messages:
        return name
    if "." in name:
        group, _, short = name.partition(".")
        return f"{_API}{group}.v1.{short}"
    for full in (f"{_API}core.v1.{name}", _META_V1 + name):
        if full in messages:
            return full
    candidates = _by_short_name().get(name, [])
    return candidates[0] if len(candidates) == 1 else name


@functools.cache
def message(name: str) -> Message:
    """The table of message ``name`` (hand-written, or built from the generated data on
    first use). Raises ``KeyError`` for a name neither has."""
    if name in _WIRE_MESSAGES:
        return _WIRE_MESSAGES[name]
    full = _full_name(name)
    rows = _generated()["messages"][full]
    fields = tuple(
        (int(number), Field(json_name, kind, mode, ref, bool(repeated), go_name))
        for number, json_name, kind, mode, repeated, ref, go_name in rows
    )
    return Message(full, fields)


@functools.cache
def _numbers(name: str) -> dict[int, Field]:
    return message(name).by_number()


class _Kinds(Mapping[tuple[str, str], str]):
    """(apiVersion, kind) of the objects decoded here -> their message, read on first use."""

    @functools.cached_property
    def _table(self) -> dict[tuple[str, str], str]:
        return {(str(a), str(k)): str(m) for a, k, m in _generated()["kinds"]}

    def __getitem__(self, key: tuple[str, str]) -> str:
        return self._table[key]

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(self._table)

    def __len__(self) -> int:
        return len(self._table)


KINDS: Mapping[tuple[str, str], str] = _Kinds()


def _go_type(message: str) -> str:
    return message.rpartition(".")[2]


# -- decoding -------------------------------------------------------------------------


def _text(raw: bytes) -> str:
    """Bytes as Go's encoding/json writes a string: each invalid UTF-8 byte becomes U+FFFD."""
    try:
        return raw.decode()
    except UnicodeDecodeError:
        return "".join(
            "\ufffd" if 0xDC80 <= ord(c) <= 0xDCFF else c
            for c in raw.decode("utf-8", "surrogateescape")
        )


def _timestamp(data: bytes) -> tuple[int, int]:
    values = _fields(message("Timestamp"), data, 0, len(data))
    return int(values.get("seconds", 0)), int(values.get("nanos", 0))


def _format_time(seconds: int, micros: int | None) -> str:
    try:
        moment = _EPOCH + datetime.timedelta(seconds=seconds)
    except OverflowError:
        raise ProtobufError(f"timestamp {seconds} is outside the years 1 to 9999") from None
    text = (
        f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}"
        f"T{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}"
    )
    return text + (f".{micros:06d}Z" if micros is not None else "Z")


def time_json(data: bytes) -> str | None:
    """``metav1.Time`` from its message bytes as Go's JSON has it: RFC 3339 in seconds,
    ``None`` (JSON null) for the zero time. Nanos are ignored, as Time.Unmarshal does."""
    if not data:
        return None
    seconds, _ = _timestamp(data)
    if seconds == _GO_ZERO_TIME_SECONDS:
        return None
    return _format_time(seconds, None)


def microtime_json(data: bytes) -> str | None:
    """``metav1.MicroTime`` as Go's JSON has it: RFC 3339 with exactly 6 fractional
    digits (nanos truncated towards zero to microseconds), ``None`` for the zero time."""
    if not data:
        return None
    seconds, nanos = _timestamp(data)
    trunc = abs(nanos) // 1000 * 1000 * (1 if nanos >= 0 else -1)
    total = seconds * 1_000_000_000 + trunc
    sec, frac = divmod(total, 1_000_000_000)
    if sec == _GO_ZERO_TIME_SECONDS and frac == 0:
        return None
    return _format_time(sec, frac // 1000)


QUANTITY_FORMAT_ERROR = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
QUANTITY_SUFFIX_ERROR = "unable to parse quantity's suffix"
_QUANTITY = re.compile(r"[+-]?[0-9]*(?:\.[0-9]*)?([eEinumkKMGTP]*[-+]?[0-9]*)")
_QUANTITY_SUFFIXES = frozenset(
    ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "n", "u", "m", "k", "M", "G", "T", "P", "E")
)
_GO_INT64 = re.compile(r"[+-]?[0-9]+")


def quantity_json(data: bytes) -> str:
    """``resource.Quantity`` from its message bytes: its text, checked as
    ``resource.ParseQuantity`` checks it (``ProtobufError`` with its texts: the regular
    expression for a malformed number, ``unable to parse quantity's suffix``); ``"0"``
    for the zero Quantity. The text is kept as sent (Go's clients send the canonical
    form; canonicalising is the typed decoder's part, for JSON and protobuf alike)."""
    values = _fields(message("Quantity"), data, 0, len(data))
    text = values.get("string")
    if text is None:
        return "0"
    # checked per occurrence in Go; the last one is what stays
    for one in values.get("_all_string", [text]):
        _check_quantity(one)
    return str(text)


def _check_quantity(text: str) -> None:
    if not text:
        raise ProtobufError(QUANTITY_FORMAT_ERROR)
    if text == "0":
        return
    match = _QUANTITY.fullmatch(text)
    if match is None:
        raise ProtobufError(QUANTITY_FORMAT_ERROR)
    suffix = match.group(1)
    if suffix in _QUANTITY_SUFFIXES:
        return
    if (
        len(suffix) > 1
        and suffix[0] in "eE"
        and _GO_INT64.fullmatch(suffix[1:])
        and -(2**63) <= int(suffix[1:]) < 2**63
    ):
        return
    raise ProtobufError(QUANTITY_SUFFIX_ERROR)


def int_or_string_json(data: bytes) -> int | str:
    """``intstr.IntOrString`` as Go's JSON has it: the number for type 0 (Int), the text
    for type 1 (String). Any other type cannot be written as JSON by Go (``impossible
    IntOrString.Type``): ``ProtobufError``."""
    values = _fields(message("IntOrString"), data, 0, len(data))
    kind = values.get("type", 0)
    if kind == 0:
        return int(values.get("intVal", 0))
    if kind == 1:
        return str(values.get("strVal", ""))
    raise ProtobufError(
        "json: error calling MarshalJSON for type intstr.IntOrString: impossible IntOrString.Type"
    )


def raw_extension_json(data: bytes) -> Any:
    """``runtime.RawExtension``: its raw bytes, which Go writes into the JSON as they are
    (they must be JSON), ``None`` when there are none."""
    raw = _fields(message("RawExtension"), data, 0, len(data)).get("raw")
    if raw is None:
        return None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise ProtobufError(
            "json: error calling MarshalJSON for type runtime.RawExtension: invalid JSON "
            f"{_text(raw)[:64]!r}"
        ) from None


def fields_v1_json(data: bytes) -> Any:
    """``metav1.FieldsV1``: its raw bytes as JSON (``None`` when absent)."""
    raw = _fields(message("FieldsV1"), data, 0, len(data)).get("Raw")
    if raw is None:
        return None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise ProtobufError(f"invalid JSON in fieldsV1: {_text(raw)[:64]!r}") from None


def _special_json(kind: str, data: bytes) -> Any:
    if kind == "time":
        return time_json(data)
    if kind == "microtime":
        return microtime_json(data)
    if kind == "quantity":
        return quantity_json(data)
    if kind == "intorstring":
        return int_or_string_json(data)
    if kind == "rawextension":
        return raw_extension_json(data)
    return fields_v1_json(data)


_SPECIAL_BY_MESSAGE = {
    _META_V1 + "Time": "time",
    _META_V1 + "MicroTime": "microtime",
    _META_V1 + "FieldsV1": "fieldsv1",
    "k8s.io.apimachinery.pkg.api.resource.Quantity": "quantity",
    "k8s.io.apimachinery.pkg.util.intstr.IntOrString": "intorstring",
    "k8s.io.apimachinery.pkg.runtime.RawExtension": "rawextension",
}


def _value_json(name: str, data: bytes) -> Any:
    """A map value or list element of message ``name`` as Go's JSON has it."""
    special = _SPECIAL_BY_MESSAGE.get(name)
    if special is not None:
        return _special_json(special, data)
    return decode_message(name, data)


def _map_entry(data: bytes, start: int, stop: int) -> tuple[bytes, bytes | None]:
    """A map entry's key and value bytes (fields 1 and 2, read as length-delimited
    whatever their wire type, as Go's generated code does; others skipped; value None
    when absent). Unlike Go, a key or value running past the entry's end is an error
    (``unexpected EOF``)."""
    key = b""
    value: bytes | None = None
    pos = start
    while pos < stop:
        tag, pos = read_varint(data, pos, stop)
        number, wire = tag >> 3, tag & 7
        if number in (1, 2):
            a, b = read_length(data, pos, stop)
            if number == 1:
                key = data[a:b]
            else:
                value = data[a:b]
            pos = b
        else:
            pos = skip_field(data, pos, stop, wire)
    return key, value


def _scalar(kind: str, raw: int) -> Any:
    if kind == "bool":
        return raw != 0
    if kind == "int32":
        return _as_int32(raw)
    return _as_int64(raw)


def _fields(msg: Message, data: bytes, start: int, stop: int) -> dict[str, Any]:
    """The fields of one message present on the wire, by JSON name (raw Python values;
    singular messages and times as their accumulated bytes)."""
    table = _numbers(msg.name)
    values: dict[str, Any] = {}
    pos = start
    go_name = _go_type(msg.name)
    while pos < stop:
        tag, pos = read_varint(data, pos, stop)
        number, wire = _as_int32(tag >> 3), tag & 7
        if wire == END_GROUP:
            raise ProtobufError(f"proto: {go_name}: wiretype end group for non-group")
        if number <= 0:
            raise ProtobufError(f"proto: {go_name}: illegal tag {number} (wire type {wire})")
        field = table.get(number)
        if field is None:
            pos = skip_field(data, pos, stop, wire)
            continue
        kind = field.kind
        if field.wire == VARINT:
            if wire == VARINT:
                raw, pos = read_varint(data, pos, stop)
                if field.repeated:
                    values.setdefault(field.name, []).append(_scalar(kind, raw))
                else:
                    values[field.name] = _scalar(kind, raw)
                continue
            if wire != LEN or not field.repeated:
                raise ProtobufError(f"proto: wrong wireType = {wire} for field {field.go}")
            # a packed repeated varint field
            a, b = read_length(data, pos, stop)
            pos = b
            items = values.setdefault(field.name, [])
            while a < b:
                raw, a = read_varint(data, a, b)
                items.append(_scalar(kind, raw))
            continue
        if wire != field.wire:
            raise ProtobufError(f"proto: wrong wireType = {wire} for field {field.go}")
        a, b = read_length(data, pos, stop)
        pos = b
        if kind in ("map_str", "map_bytes", "map_msg"):
            key, item = _map_entry(data, a, b)
            target = values.setdefault(field.name, {})
            if kind == "map_str":
                target[_text(key)] = _text(item or b"")
            elif kind == "map_bytes":
                target[_text(key)] = base64.b64encode(item or b"").decode()
            else:
                target[_text(key)] = _value_json(field.message, item or b"")
        elif kind == "string":
            text = _text(data[a:b])
            if field.repeated:
                values.setdefault(field.name, []).append(text)
            else:
                values[field.name] = text
                if msg.name == "Quantity":  # each occurrence is parsed by Go
                    values.setdefault("_all_string", []).append(text)
        elif kind == "bytes":
            if field.repeated:
                values.setdefault(field.name, []).append(base64.b64encode(data[a:b]).decode())
            else:
                values[field.name] = data[a:b]
        elif kind in ("time", "microtime") and not field.repeated:
            values[field.name] = data[a:b]  # custom Unmarshal: the last one wins
        elif field.repeated:
            element = (
                _special_json(kind, data[a:b])
                if kind in _SPECIAL_KINDS
                else decode_message(field.message, data[a:b])
            )
            values.setdefault(field.name, []).append(element)
        else:
            # a singular message seen twice is merged, as concatenated encodings are
            values[field.name] = values.get(field.name, b"") + data[a:b]
    return values


def _to_json(msg: Message, values: dict[str, Any]) -> JSON:
    out: JSON = {}
    for _, field in msg.fields:
        present = field.name in values
        value = values.get(field.name)
        mode = field.mode
        kind = field.kind
        if field.repeated or kind in ("map_str", "map_bytes", "map_msg"):
            if value:
                out[field.name] = value
            elif mode in ("always", "nullable"):
                out[field.name] = None
            continue
        if mode in ("pointer", "nullable") and not present:
            if mode == "nullable":
                out[field.name] = None
            continue
        if kind == "message":
            decoded = decode_message(field.message, value or b"")
            if mode == "inline":
                for k, v in decoded.items():
                    out.setdefault(k, v)
            else:
                out[field.name] = decoded
            continue
        if kind in _SPECIAL_KINDS:
            if kind == "fieldsv1" and not present:
                continue
            special = _special_json(kind, value or b"")
            if special is not None or mode != "omitzero":
                out[field.name] = special
            continue
        if mode in ("pointer", "nullable"):
            out[field.name] = (
                base64.b64encode(value).decode() if isinstance(value, bytes) else value
            )
            continue
        if kind == "bytes" and not present:
            if mode == "always":
                out[field.name] = None  # a nil []byte
            continue
        zero: Any = (
            "" if kind == "string" else False if kind == "bool" else b"" if kind == "bytes" else 0
        )
        if value is None:
            value = zero
        if mode == "always" or value != zero:
            out[field.name] = (
                base64.b64encode(value).decode() if isinstance(value, bytes) else value
            )
    return out


def decode_message(name: str, data: bytes) -> JSON:
    """The JSON object Go's encoding/json writes for message ``name`` decoded from ``data``.

    ``name`` is a full protobuf name (``k8s.io.api.apps.v1.Deployment``), a core/v1 or
    meta/v1 message's own name (``Pod``, ``ObjectMeta``), or ``group.Name`` for a
    ``k8s.io.api.<group>.v1`` message. Raises ``ProtobufError`` for malformed or
    truncated input; unknown field numbers are skipped by wire type.
    """
    msg = message(name)
    return _to_json(msg, _fields(msg, data, 0, len(data)))


@dataclass(frozen=True, slots=True)
class Envelope:
    """The ``runtime.Unknown`` wrapper of a protobuf body."""

    api_version: str
    kind: str
    raw: bytes


def decode_envelope(body: bytes) -> Envelope:
    """The envelope of a protobuf body: magic ``k8s\\x00`` then a ``runtime.Unknown``.

    Raises ``ProtobufError`` with the protobuf serializer's own texts: ``empty data``,
    ``provided data does not appear to be a protobuf message, expected prefix [107 56 115
    0]``, ``empty body``, or the unmarshal error of the ``Unknown`` message.
    """
    if not body:
        raise ProtobufError("empty data")
    if not body.startswith(MAGIC):
        raise ProtobufError(
            "provided data does not appear to be a protobuf message, expected prefix "
            f"[{' '.join(str(b) for b in MAGIC)}]"
        )
    if len(body) == len(MAGIC):
        raise ProtobufError("empty body")
    values = _fields(message("Unknown"), body, len(MAGIC), len(body))
    type_meta = values.get("typeMeta", b"")
    tm = _fields(message("TypeMeta"), type_meta, 0, len(type_meta))
    return Envelope(
        str(tm.get("apiVersion", "")), str(tm.get("kind", "")), bytes(values.get("raw", b""))
    )


def _with_defaults(
    env: Envelope, default_api_version: str, default_kind: str
) -> tuple[str, str, str]:
    """(apiVersion, version, kind) after the serializer's ``copyKindDefaults``."""
    group, version = split_api_version(env.api_version)
    kind = env.kind or default_kind
    if not version:
        group, version = split_api_version(default_api_version)
    return format_api_version(group, version), version, kind


def _go_quote(text: str) -> str:
    return orjson.dumps(text).decode()


def _summary(body: bytes) -> str:
    """``summarizeData(body, 30)`` of kube-apiserver's handlers."""
    if not body:
        return "<empty>"
    if body[:1] == b"{":
        return _text(body[:30]) + (" ..." if len(body) > 30 else "")
    return body[:30].hex() + (" ..." if len(body) > 30 else "")


def decode_object(body: bytes, api_version: str, kind: str) -> JSON:
    """A create/update body for the built-in resource of ``api_version``/``kind`` as the
    JSON object that body would have been in JSON (``apiVersion``/``kind`` first, from the
    envelope, defaulted from the request's as kube-apiserver does).

    The object goes on to the same checks as a JSON body (a kind or version other than
    the request's is refused there). Malformed input raises a 400 ``ApiError`` worded as
    kube-apiserver's ``transformDecodeError``: ``the object provided is unrecognized (must
    be of type ConfigMap): <error> (<hex of the first 30 bytes>)`` while no kind is known,
    ``ConfigMap in version "v1" cannot be handled as a ConfigMap: <error>`` after; an
    envelope naming a kind not decoded here gets ``... : no kind "X" is registered for
    version "V"``.
    """
    try:
        env = decode_envelope(body)
    except ProtobufError as exc:
        raise ApiError.bad_request(
            "the object provided is unrecognized (must be "
            f"of type {kind}): {exc} ({_summary(body)})"
        ) from None
    actual_api_version, version, actual_kind = _with_defaults(env, api_version, kind)
    prefix = f"{actual_kind} in version {_go_quote(version)} cannot be handled as a {kind}"
    table = KINDS.get((actual_api_version, actual_kind))
    if table is None:
        raise ApiError.bad_request(
            f"{prefix}: no kind {_go_quote(actual_kind)} is "
            f"registered for version {_go_quote(actual_api_version)}"
        )
    try:
        obj = decode_message(table, env.raw)
    except ProtobufError as exc:
        raise ApiError.bad_request(f"{prefix}: {exc}") from None
    return {"kind": actual_kind, "apiVersion": actual_api_version, **obj}


def decode_delete_options(body: bytes) -> JSON:
    """A protobuf ``DeleteOptions`` body as its JSON object (``kind``/``apiVersion`` from
    the envelope, defaulted to ``DeleteOptions`` in ``meta.k8s.io/v1``).

    Errors are 400s with the decoder's plain text, as kube-apiserver's delete handler
    words them; another kind → ``decoded object cannot be converted to DeleteOptions``.
    """
    try:
        env = decode_envelope(body)
        api_version, _, kind = _with_defaults(env, "meta.k8s.io/v1", "DeleteOptions")
        if kind != "DeleteOptions":
            raise ApiError.bad_request("decoded object cannot be converted to DeleteOptions")
        obj = decode_message("DeleteOptions", env.raw)
    except ProtobufError as exc:
        raise ApiError.bad_request(str(exc)) from None
    return {"kind": kind, "apiVersion": api_version, **obj}
