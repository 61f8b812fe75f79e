"""Bounds on what the webhook server reads, applied before any handler runs.

- **Body size.** kube-apiserver accepts request bodies of at most 3 MiB, and etcd stores
  objects of at most 1.5 MiB, but an UPDATE's AdmissionReview carries the object *and*
  the old object; so, as controller-runtime does, an admission body may take
  ``MAX_ADMISSION_BODY_BYTES`` (7 MiB: two 3 MiB objects and 1 MiB for the rest). A
  ConversionReview carries every object of a list page that needs converting, so its
  bound, ``MAX_CONVERSION_BODY_BYTES``, is larger (32 MiB). Larger bodies are refused with
  ``413`` as soon as their ``Content-Length`` (or the bytes received) exceed the bound.
- **Nesting.** An object may nest at most ``MAX_OBJECT_DEPTH`` (100) objects and arrays,
  the embedded API server's decode limit; a review wraps objects in at most three more
  levels (review, request, objects list), so a body may nest ``MAX_BODY_DEPTH`` levels.
  Deeper bodies are ``400``: nothing recursive (model parsing, patch computation) ever
  sees them.
"""

from __future__ import annotations

from typing import Any, Final

import orjson

__all__ = [
    "MAX_ADMISSION_BODY_BYTES",
    "MAX_BODY_DEPTH",
    "MAX_CONVERSION_BODY_BYTES",
    "MAX_OBJECT_DEPTH",
    "BodyError",
    "decode_body",
]

MAX_ADMISSION_BODY_BYTES: Final = 7 * 1024 * 1024
MAX_CONVERSION_BODY_BYTES: Final = 32 * 1024 * 1024
MAX_OBJECT_DEPTH: Final = 100
MAX_BODY_DEPTH: Final = MAX_OBJECT_DEPTH + 3

_ENCODER_DEPTH: Final = 254  # orjson refuses to write more nested containers than this


class BodyError(ValueError):
    """A request body the server cannot read as a JSON object; ``str()`` says why."""


def _too_deep() -> BodyError:
    return BodyError(
        f"the request body nests deeper than {MAX_BODY_DEPTH} levels of objects and arrays "
        f"(objects may nest at most {MAX_OBJECT_DEPTH})"
    )


def check_depth(value: Any, limit: int = MAX_BODY_DEPTH) -> None:
    """Raise :class:`BodyError` when ``value`` nests more than ``limit`` containers.

    The walk is orjson's encoder, which stops at its own recursion limit: ``value``
    wrapped in ``254 - limit`` lists encodes only if its own depth is within ``limit``.
    """
    if not isinstance(value, dict | list):
        return
    wrapped: Any = value
    for _ in range(_ENCODER_DEPTH - limit):
        wrapped = [wrapped]
    try:
        orjson.dumps(wrapped)
    except orjson.JSONEncodeError as exc:
        if "Recursion" in str(exc):
            raise _too_deep() from None
        raise BodyError(f"the request body cannot be written back as JSON: {exc}") from None


def decode_body(body: bytes) -> dict[str, Any]:
    """``body`` as a JSON object within the nesting bound; raises :class:`BodyError`.

    The depth is walked only when the body holds more opening brackets than the bound.
    """
    if not body.strip():
        raise BodyError("the request body is empty")
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        if "recursion" in exc.msg.lower() or "depth" in exc.msg.lower():
            raise _too_deep() from None
        raise BodyError(f"the request body is not JSON: {exc.msg} at byte {exc.pos}") from None
    if not isinstance(value, dict):
        raise BodyError(f"the request body is a JSON {_json_type(value)}, not an object")
    if body.count(b"{") + body.count(b"[") > MAX_BODY_DEPTH:
        check_depth(value)
    return value


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"
