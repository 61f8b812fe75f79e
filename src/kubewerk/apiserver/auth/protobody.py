"""Protobuf request bodies of the creates kubectl sends as protobuf and that store
nothing, decoded to the JSON object the same client would have sent as JSON:
``authentication.k8s.io/v1`` SelfSubjectReview (``kubectl auth whoami``) and
TokenRequest (``kubectl create token``), ``authorization.k8s.io/v1``
SelfSubjectAccessReview, SubjectAccessReview, LocalSubjectAccessReview and
SelfSubjectRulesReview (``kubectl auth can-i``).

Only the fields the server reads are decoded (ObjectMeta name and namespace, the
specs); status and every other field are skipped. Malformed input is a 400
``ApiError``. ``decoder(kind)`` is None for a kind not listed here.
"""

from __future__ import annotations

from typing import Any

from kubewerk.apiserver.protobuf import (
    ProtobufError,
    decode_envelope,
    read_length,
    read_varint,
    skip_field,
)
from kubewerk.core.errors import ApiError

JSON = dict[str, Any]


def _fields(data: bytes) -> list[tuple[int, int, Any]]:
    """``(number, wire, value)`` of each field: bytes for length-delimited, int for varint."""
    out: list[tuple[int, int, Any]] = []
    pos, end = 0, len(data)
    while pos < end:
        key, pos = read_varint(data, pos, end)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = read_varint(data, pos, end)
            out.append((number, wire, value))
        elif wire == 2:
            start, pos = read_length(data, pos, end)
            out.append((number, wire, data[start:pos]))
        else:
            pos = skip_field(data, pos, end, wire)
    return out


def _text(raw: Any) -> str:
    if not isinstance(raw, bytes):
        raise ProtobufError("proto: wrong wireType for a string field")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ProtobufError("proto: invalid UTF-8 in a string field") from None


def _meta(raw: bytes) -> JSON:
    meta: JSON = {}
    for number, _, value in _fields(raw):
        if number == 1:
            meta["name"] = _text(value)
        elif number == 3:
            meta["namespace"] = _text(value)
    return meta


def _signed64(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _token_request(raw: bytes) -> JSON:
    obj: JSON = {}
    for number, _, value in _fields(raw):
        if number == 1 and isinstance(value, bytes):
            obj["metadata"] = _meta(value)
        elif number == 2 and isinstance(value, bytes):
            spec: JSON = {}
            for field, _, item in _fields(value):
                if field == 1:
                    spec.setdefault("audiences", []).append(_text(item))
                elif field == 4 and isinstance(item, int):
                    spec["expirationSeconds"] = _signed64(item)
                elif field == 3 and isinstance(item, bytes):
                    names = {1: "kind", 2: "apiVersion", 3: "name", 4: "uid"}
                    spec["boundObjectRef"] = {
                        names[n]: _text(v) for n, _, v in _fields(item) if n in names
                    }
            obj["spec"] = spec
    return obj


def _self_subject_review(raw: bytes) -> JSON:
    obj: JSON = {}
    for number, _, value in _fields(raw):
        if number == 1 and isinstance(value, bytes):
            obj["metadata"] = _meta(value)
    return obj


_RESOURCE_ATTRIBUTES = {
    1: "namespace",
    2: "verb",
    3: "group",
    4: "version",
    5: "resource",
    6: "subresource",
    7: "name",
}


def _strings(raw: bytes, names: dict[int, str]) -> JSON:
    return {names[n]: _text(v) for n, _, v in _fields(raw) if n in names}


def _access_spec(raw: bytes) -> JSON:
    """A (Self)SubjectAccessReviewSpec (the self one has fields 1 and 2 only)."""
    spec: JSON = {}
    for number, _, value in _fields(raw):
        if number == 1 and isinstance(value, bytes):
            spec["resourceAttributes"] = _strings(value, _RESOURCE_ATTRIBUTES)
        elif number == 2 and isinstance(value, bytes):
            spec["nonResourceAttributes"] = _strings(value, {1: "path", 2: "verb"})
        elif number == 3:
            spec["user"] = _text(value)
        elif number == 4:
            spec.setdefault("groups", []).append(_text(value))
        elif number == 5 and isinstance(value, bytes):
            key, items = "", []
            for n, _, v in _fields(value):
                if n == 1:
                    key = _text(v)
                elif n == 2 and isinstance(v, bytes):
                    items = [_text(i) for m, _, i in _fields(v) if m == 1]
            spec.setdefault("extra", {})[key] = items
        elif number == 6:
            spec["uid"] = _text(value)
    return spec


def _review(spec: Any) -> Any:
    def decode_raw(raw: bytes) -> JSON:
        obj: JSON = {}
        for number, _, value in _fields(raw):
            if number == 1 and isinstance(value, bytes):
                obj["metadata"] = _meta(value)
            elif number == 2 and isinstance(value, bytes):
                obj["spec"] = spec(value)
        return obj

    return decode_raw


_DECODERS = {
    "TokenRequest": _token_request,
    "SelfSubjectReview": _self_subject_review,
    "SubjectAccessReview": _review(_access_spec),
    "LocalSubjectAccessReview": _review(_access_spec),
    "SelfSubjectAccessReview": _review(_access_spec),
    "SelfSubjectRulesReview": _review(lambda raw: _strings(raw, {1: "namespace"})),
}


def decoder(kind: str) -> Any:
    """A ``bytes -> JSON`` decoder of protobuf bodies for ``kind`` (see the module doc),
    or None."""
    decode_raw = _DECODERS.get(kind)
    if decode_raw is None:
        return None

    def decode(body: bytes) -> JSON:
        try:
            env = decode_envelope(body)
            obj: JSON = decode_raw(env.raw)
        except ProtobufError as exc:
            raise ApiError.bad_request(
                f"the object provided is unrecognized (must be of type {kind}): {exc}"
            ) from None
        if env.api_version:
            obj["apiVersion"] = env.api_version
        if env.kind:
            obj["kind"] = env.kind
        return obj

    return decode
