"""HTTP pieces shared by the router and the watch stream: ASGI callables, response headers,
content negotiation."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Final

from kubewerk.core.gofmt import go_quote

AsgiScope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

_TABLE_MARK = "as=table"


WARNING_TOTAL_RUNES: Final = 4 * 1024
"""Characters of warning text a response carries before they are truncated (kube's
warning recorder, ``truncateAtTotalRunes``)."""
WARNING_ITEM_RUNES: Final = 256
"""Characters each warning keeps once truncating (``truncateItemRunes``)."""
WARNINGS_READ_MAX: Final = WARNING_TOTAL_RUNES // 16
"""More warnings than a response ever carries: :func:`warning_headers` stops once
:data:`WARNING_TOTAL_RUNES` characters are written, so a source whose every warning is
at least 16 characters long (and distinct) may stop after this many."""


def warning_header(text: str) -> bytes:
    """A ``Warning`` header value as kube-apiserver writes it (code 299, agent ``-``, the
    text quoted as Go's ``strconv.Quote`` does: control characters escaped, so a warning
    can never break the header block)."""
    return ("299 - " + go_quote(text)).encode("utf-8", "replace")


def warning_headers(warnings: list[str] | None) -> list[bytes]:
    """The ``Warning`` header values of a response, as kube's warning recorder writes
    them: empty and repeated texts dropped; once the texts exceed
    :data:`WARNING_TOTAL_RUNES` characters, each is cut to :data:`WARNING_ITEM_RUNES`
    and later ones are added only while the total is under the limit."""
    if not warnings:
        return []
    seen: set[str] = set()
    kept: list[str] = []
    written = 0
    truncating = False
    for text in warnings:
        if not text or text in seen:
            continue
        if truncating and written >= WARNING_TOTAL_RUNES:
            break
        seen.add(text)
        if truncating:
            text = text[:WARNING_ITEM_RUNES]
        elif written + len(text) > WARNING_TOTAL_RUNES:
            truncating = True
            kept = [k[:WARNING_ITEM_RUNES] for k in kept]
            text = text[:WARNING_ITEM_RUNES]
            written = sum(len(k) for k in kept)
        kept.append(text)
        written += len(text)
    return [warning_header(t) for t in kept]


def json_headers(
    payload: bytes, warnings: list[str] | None = None, content_type: bytes = b"application/json"
) -> list[tuple[bytes, bytes]]:
    """Content type, length and the ``Warning`` headers (:func:`warning_headers`) for a
    complete body."""
    headers = [(b"content-type", content_type), (b"content-length", str(len(payload)).encode())]
    headers.extend((b"warning", w) for w in warning_headers(warnings))
    return headers


def wants_table(accept: str) -> bool:
    """Whether the first media type of ``Accept`` asks for a ``meta.k8s.io`` Table."""
    first = accept.split(",")[0].replace(" ", "").lower()
    return _TABLE_MARK in first and "g=meta.k8s.io" in first
