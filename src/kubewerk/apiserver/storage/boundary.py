"""The storage boundary: nothing is stored that the server cannot write back.

Every answer that carries a stored object is written with orjson, which refuses values
nested deeper than ``ENCODER_MAX_DEPTH`` containers, integers outside the 64-bit range,
strings that are not valid UTF-8 (lone surrogates), non-string keys and non-JSON types.
An object that fails there breaks every read of its whole resource (LIST, watch, informer
sync), so both stores call ``encode_storable`` on the object they are about to commit,
before they change anything, and refuse it with ``UnstorableObject``.

Depth headroom: the server embeds a stored object at most four containers deep (a watch
event of a Table row with ``includeObject=Object``: ``{"object": {"rows": [{"object":
OBJ}]}}``; a LIST puts it two deep, a watch event one, an admission review two). The
object is encoded wrapped in ``EMBED_HEADROOM`` (six) lists, so the encoder's own limit
proves it can be written back in every such answer with two levels to spare; that leaves
``MAX_STORED_DEPTH`` (248) levels for the object itself, counting the object as level 1.
The request-side decoding limits must stay at or below it (they normally stop such values
first; this is the backstop). The wrapping costs eight bytes, not a second encoding.

NaN and infinite floats are not refused here: orjson writes them as ``null``, so they do
not make a resource unreadable (the request side refuses them, as Kubernetes does).
"""

from __future__ import annotations

from typing import Final

import orjson

from .base import JSON, UnstorableObject

__all__ = [
    "EMBED_HEADROOM",
    "ENCODER_MAX_DEPTH",
    "MAX_STORED_DEPTH",
    "encode_storable",
    "stored_encoding",
]

ENCODER_MAX_DEPTH: Final = 254
"""The deepest nesting of arrays and objects orjson writes (255 raises "Recursion limit")."""

EMBED_HEADROOM: Final = 6
"""Containers an answer may wrap around a stored object (four used today, two spare)."""

MAX_STORED_DEPTH: Final = ENCODER_MAX_DEPTH - EMBED_HEADROOM
"""The deepest object a store accepts: the object itself is level 1, ``{"a": {}}`` is 2."""

_dumps = orjson.dumps

_last: tuple[JSON | None, bytes] = (None, b"")
"""The object ``encode_storable`` accepted last and its wrapped encoding (one tuple,
replaced at once, so a reader on another thread never pairs one object with another's
bytes)."""


def encode_storable(key: str, obj: JSON) -> tuple[bytes, int]:
    """``obj`` encoded inside ``EMBED_HEADROOM`` lists, and the size of ``obj``'s own JSON.

    ``blob[EMBED_HEADROOM:len(blob) - EMBED_HEADROOM]`` is ``orjson.dumps(obj)``.
    Raises ``UnstorableObject`` (naming ``key`` and the cause) when the server could not
    write ``obj`` back in a list, a watch event or a Table; nothing is changed then.
    """
    global _last
    try:
        blob = _dumps([[[[[[obj]]]]]])
    except orjson.JSONEncodeError as e:
        raise UnstorableObject(key, _cause(str(e))) from None
    _last = (obj, blob)
    return blob, len(blob) - 2 * EMBED_HEADROOM


def stored_encoding(obj: JSON) -> bytes | None:
    """``orjson.dumps(obj)`` when ``obj`` is the very object a store committed last (its
    encoding at the boundary is cut out of the wrapping, not made again), else None.

    Exact because a committed object is never changed (the stores' contract): a create's
    or update's answer is that object, encoded once for both. Holds the last committed
    object until the next commit.
    """
    last = _last
    if last[0] is not obj:
        return None
    return last[1][EMBED_HEADROOM:-EMBED_HEADROOM]


def _cause(encoder_message: str) -> str:
    """A user-facing reason for an orjson encode error."""
    if "Recursion limit" in encoder_message:
        return (
            f"it is nested more than {MAX_STORED_DEPTH} levels deep, too deep to be "
            "written back in a list or watch"
        )
    if "Integer exceeds" in encoder_message:
        return f"it holds an integer outside the 64-bit range [{-(2**63)}, {2**64 - 1}]"
    if "surrogates" in encoder_message:
        return "it holds a string that is not valid Unicode (a lone surrogate)"
    return f"it holds a value JSON cannot represent ({encoder_message})"
