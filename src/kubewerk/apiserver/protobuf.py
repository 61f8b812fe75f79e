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
from dataclasses import dataclass
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
# time, microtime, fieldsv1, map_str (map<string,string>), map_bytes (map<string,bytes>).
# JSON modes (from the Go struct tags):
#   omitempty  value field with ``omitempty``: left out when zero (structs and Time are
#              never left out by encoding/json: ``{}`` / ``null``)
#   omitzero   left out when zero (ObjectMeta.creationTimestamp)
#   always     no ``omitempty``: written even when zero (nil slices and maps as null)
#   pointer    Go pointer: written exactly when the field was on the wire


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


def _message_field(
    name: str, message: str, mode: str = "always", repeated: bool = False, go: str = ""
) -> Field:
    return Field(name, "message", mode, message=message, repeated=repeated, go_name=go)


_META = _message_field("metadata", "ObjectMeta", go="ObjectMeta")
_OBJECT_REFERENCE = "ObjectReference"

MESSAGES: dict[str, Message] = {
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
        # k8s.io/apimachinery/pkg/apis/meta/v1
        Message(
            "Timestamp",
            ((1, Field("seconds", "int64", "always")), (2, Field("nanos", "int32", "always"))),
        ),
        Message(
            "ObjectMeta",
            (
                (1, _string_field("name")),
                (2, _string_field("generateName")),
                (3, _string_field("namespace")),
                (4, _string_field("selfLink")),
                (5, _string_field("uid", go="UID")),
                (6, _string_field("resourceVersion")),
                (7, Field("generation", "int64")),
                (8, Field("creationTimestamp", "time", "omitzero")),
                (9, Field("deletionTimestamp", "time", "pointer")),
                (10, Field("deletionGracePeriodSeconds", "int64", "pointer")),
                (11, Field("labels", "map_str")),
                (12, Field("annotations", "map_str")),
                (
                    13,
                    _message_field("ownerReferences", "OwnerReference", "omitempty", repeated=True),
                ),
                (14, Field("finalizers", "string", repeated=True)),
                (
                    17,
                    _message_field(
                        "managedFields", "ManagedFieldsEntry", "omitempty", repeated=True
                    ),
                ),
            ),
        ),
        Message(
            "OwnerReference",
            (
                (5, _string_field("apiVersion", "always", go="APIVersion")),
                (1, _string_field("kind", "always")),
                (3, _string_field("name", "always")),
                (4, _string_field("uid", "always", go="UID")),
                (6, Field("controller", "bool", "pointer")),
                (7, Field("blockOwnerDeletion", "bool", "pointer")),
            ),
        ),
        Message(
            "ManagedFieldsEntry",
            (
                (1, _string_field("manager")),
                (2, _string_field("operation")),
                (3, _string_field("apiVersion", go="APIVersion")),
                (4, Field("time", "time", "pointer")),
                (6, _string_field("fieldsType")),
                (7, Field("fieldsV1", "fieldsv1", "pointer")),
                (8, _string_field("subresource")),
            ),
        ),
        Message("FieldsV1", ((1, Field("Raw", "bytes", "always")),)),
        Message(
            "DeleteOptions",
            (
                (1, Field("gracePeriodSeconds", "int64", "pointer")),
                (2, _message_field("preconditions", "Preconditions", "pointer")),
                (3, Field("orphanDependents", "bool", "pointer")),
                (4, _string_field("propagationPolicy", "pointer")),
                (5, Field("dryRun", "string", repeated=True)),
                (6, Field("ignoreStoreReadErrorWithClusterBreakingPotential", "bool", "pointer")),
            ),
        ),
        Message(
            "Preconditions",
            (
                (1, _string_field("uid", "pointer", go="UID")),
                (2, _string_field("resourceVersion", "pointer")),
            ),
        ),
        # k8s.io/api/core/v1
        Message(
            "ConfigMap",
            (
                (1, _META),
                (4, Field("immutable", "bool", "pointer")),
                (2, Field("data", "map_str")),
                (3, Field("binaryData", "map_bytes")),
            ),
        ),
        Message(
            "Secret",
            (
                (1, _META),
                (5, Field("immutable", "bool", "pointer")),
                (2, Field("data", "map_bytes")),
                (4, Field("stringData", "map_str")),
                (3, _string_field("type")),
            ),
        ),
        Message(
            "Namespace",
            (
                (1, _META),
                (2, _message_field("spec", "NamespaceSpec")),
                (3, _message_field("status", "NamespaceStatus")),
            ),
        ),
        Message("NamespaceSpec", ((1, Field("finalizers", "string", repeated=True)),)),
        Message(
            "NamespaceStatus",
            (
                (1, _string_field("phase")),
                (2, _message_field("conditions", "NamespaceCondition", "omitempty", repeated=True)),
            ),
        ),
        Message(
            "NamespaceCondition",
            (
                (1, _string_field("type", "always")),
                (2, _string_field("status", "always")),
                (4, Field("lastTransitionTime", "time")),
                (5, _string_field("reason")),
                (6, _string_field("message")),
            ),
        ),
        Message(
            "ServiceAccount",
            (
                (1, _META),
                (2, _message_field("secrets", _OBJECT_REFERENCE, "omitempty", repeated=True)),
                (
                    3,
                    _message_field(
                        "imagePullSecrets", "LocalObjectReference", "omitempty", repeated=True
                    ),
                ),
                (4, Field("automountServiceAccountToken", "bool", "pointer")),
            ),
        ),
        Message(
            _OBJECT_REFERENCE,
            (
                (1, _string_field("kind")),
                (2, _string_field("namespace")),
                (3, _string_field("name")),
                (4, _string_field("uid", go="UID")),
                (5, _string_field("apiVersion", go="APIVersion")),
                (6, _string_field("resourceVersion")),
                (7, _string_field("fieldPath")),
            ),
        ),
        Message("LocalObjectReference", ((1, _string_field("name")),)),
        Message(
            "Event",
            (
                (1, _META),
                (2, _message_field("involvedObject", _OBJECT_REFERENCE)),
                (3, _string_field("reason")),
                (4, _string_field("message")),
                (5, _message_field("source", "EventSource")),
                (6, Field("firstTimestamp", "time")),
                (7, Field("lastTimestamp", "time")),
                (8, Field("count", "int32")),
                (9, _string_field("type")),
                (10, Field("eventTime", "microtime")),
                (11, _message_field("series", "EventSeries", "pointer")),
                (12, _string_field("action")),
                (13, _message_field("related", _OBJECT_REFERENCE, "pointer")),
                (14, _string_field("reportingComponent", "always", go="ReportingController")),
                (15, _string_field("reportingInstance", "always")),
            ),
        ),
        Message("EventSource", ((1, _string_field("component")), (2, _string_field("host")))),
        Message(
            "EventSeries",
            ((1, Field("count", "int32")), (2, Field("lastObservedTime", "microtime"))),
        ),
        # k8s.io/api/events/v1 (Go type names repeat core's; the table keys are ours)
        Message(
            "events.Event",
            (
                (1, _META),
                (2, Field("eventTime", "microtime", "always")),
                (3, _message_field("series", "events.EventSeries", "pointer")),
                (4, _string_field("reportingController")),
                (5, _string_field("reportingInstance")),
                (6, _string_field("action")),
                (7, _string_field("reason")),
                (8, _message_field("regarding", _OBJECT_REFERENCE)),
                (9, _message_field("related", _OBJECT_REFERENCE, "pointer")),
                (10, _string_field("note")),
                (11, _string_field("type")),
                (12, _message_field("deprecatedSource", "EventSource")),
                (13, Field("deprecatedFirstTimestamp", "time")),
                (14, Field("deprecatedLastTimestamp", "time")),
                (15, Field("deprecatedCount", "int32")),
            ),
        ),
        Message(
            "events.EventSeries",
            (
                (1, Field("count", "int32", "always")),
                (2, Field("lastObservedTime", "microtime", "always")),
            ),
        ),
        # k8s.io/api/coordination/v1
        Message("Lease", ((1, _META), (2, _message_field("spec", "LeaseSpec")))),
        Message(
            "LeaseSpec",
            (
                (1, _string_field("holderIdentity", "pointer")),
                (2, Field("leaseDurationSeconds", "int32", "pointer")),
                (3, Field("acquireTime", "microtime", "pointer")),
                (4, Field("renewTime", "microtime", "pointer")),
                (5, Field("leaseTransitions", "int32", "pointer")),
                (6, _string_field("strategy", "pointer")),
                (7, _string_field("preferredHolder", "pointer")),
            ),
        ),
    )
}
_NUMBERS: dict[str, dict[int, Field]] = {name: m.by_number() for name, m in MESSAGES.items()}

# (apiVersion, kind) of the objects decoded here -> message table
KINDS: dict[tuple[str, str], str] = {
    ("v1", "ConfigMap"): "ConfigMap",
    ("v1", "Secret"): "Secret",
    ("v1", "Namespace"): "Namespace",
    ("v1", "ServiceAccount"): "ServiceAccount",
    ("v1", "Event"): "Event",
    ("events.k8s.io/v1", "Event"): "events.Event",
    ("coordination.k8s.io/v1", "Lease"): "Lease",
}


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
    values = _fields(MESSAGES["Timestamp"], data, 0, len(data))
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


def _map_entry(data: bytes, start: int, stop: int) -> tuple[bytes, bytes]:
    """A map entry's key and value bytes (fields 1 and 2, read as length-delimited
    whatever their wire type, as Go's generated code does; others skipped). Unlike Go, a
    key or value running past the entry's end is an error (``unexpected EOF``)."""
    key = value = b""
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


def _fields(msg: Message, data: bytes, start: int, stop: int) -> dict[str, Any]:
    """The fields of one message present on the wire, by JSON name (raw Python values;
    singular messages and times as their accumulated bytes)."""
    table = _NUMBERS[msg.name]
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
        if wire != field.wire:
            raise ProtobufError(f"proto: wrong wireType = {wire} for field {field.go}")
        kind = field.kind
        if field.wire == VARINT:
            raw, pos = read_varint(data, pos, stop)
            value: Any = (
                raw != 0
                if kind == "bool"
                else _as_int32(raw)
                if kind == "int32"
                else _as_int64(raw)
            )
            values[field.name] = value
            continue
        a, b = read_length(data, pos, stop)
        pos = b
        if kind in ("map_str", "map_bytes"):
            key, item = _map_entry(data, a, b)
            values.setdefault(field.name, {})[_text(key)] = (
                _text(item) if kind == "map_str" else base64.b64encode(item).decode()
            )
        elif kind == "string":
            text = _text(data[a:b])
            if field.repeated:
                values.setdefault(field.name, []).append(text)
            else:
                values[field.name] = text
        elif kind == "bytes":
            values[field.name] = data[a:b]
        elif kind in ("time", "microtime"):
            values[field.name] = data[a:b]  # custom Unmarshal: the last one wins
        elif field.repeated:
            values.setdefault(field.name, []).append(decode_message(field.message, data[a:b]))
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
        if field.repeated or kind in ("map_str", "map_bytes"):
            if value:
                out[field.name] = value
            elif mode == "always":
                out[field.name] = None
            continue
        if kind in ("time", "microtime"):
            text = (time_json if kind == "time" else microtime_json)(value or b"")
            if mode == "pointer":
                if present:
                    out[field.name] = text
            elif text is not None or mode != "omitzero":
                out[field.name] = text
            continue
        if kind == "fieldsv1":
            if isinstance(value, bytes):
                raw = _fields(MESSAGES["FieldsV1"], value, 0, len(value)).get("Raw")
                if raw is None:
                    out[field.name] = None
                else:
                    try:
                        out[field.name] = orjson.loads(raw)
                    except orjson.JSONDecodeError:
                        raise ProtobufError(
                            f"invalid JSON in {field.name}: {_text(raw)[:64]!r}"
                        ) from None
            continue
        if kind == "message":
            if mode == "pointer" and not present:
                continue
            out[field.name] = decode_message(field.message, value or b"")
            continue
        if mode == "pointer":
            if present:
                out[field.name] = (
                    base64.b64encode(value).decode() if isinstance(value, bytes) else value
                )
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

    Raises ``ProtobufError`` for malformed or truncated input; unknown field numbers are
    skipped by wire type.
    """
    msg = MESSAGES[name]
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
    values = _fields(MESSAGES["Unknown"], body, len(MAGIC), len(body))
    type_meta = values.get("typeMeta", b"")
    tm = _fields(MESSAGES["TypeMeta"], type_meta, 0, len(type_meta))
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
