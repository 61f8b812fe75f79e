"""How Go's ``net/http`` server (and so kube-apiserver) reads an HTTP/1.x request head:
the checks it makes and the plain-text answers it gives when one fails.

``LimitedHttpToolsProtocol`` (``httpproto``) applies these on top of httptools (llhttp),
which is stricter than Go in some places and laxer in others. What Go does, from
``net/http`` ``server.go`` (``conn.readRequest``, ``conn.serve``), ``request.go``
(``readRequest``), ``transfer.go`` (``parseTransferEncoding``, ``fixLength``) and
``net/textproto``, and how the checks here follow it:

- a malformed request (request line, header line, Content-Length, two ``Host`` lines) is
  ``400 Bad Request`` with the body ``400 Bad Request`` and no detail (``BAD_REQUEST``);
- a missing ``Host`` on HTTP/1.1 (except ``CONNECT``), a ``Host`` value with bytes
  ``httpguts.ValidHostHeader`` refuses: ``400 Bad Request: missing required Host header``,
  ``400 Bad Request: malformed Host header`` (``status_error``: the detail is in the
  status line and the body);
- a major version other than 1: ``505 HTTP Version Not Supported: unsupported protocol
  version``;
- a ``Transfer-Encoding`` on HTTP/1.1 that is not exactly one ``chunked``:
  ``501 Not Implemented``, body ``Unsupported transfer encoding``;
- an ``Expect`` without the ``100-continue`` token: ``417 Expectation Failed`` with
  ``Content-Length: 0`` (the handler does not run); ``100 Continue`` is sent only to an
  HTTP/1.1 request that announces a body;
- ``OPTIONS *`` is answered by the server itself: ``200`` with ``Content-Length: 0``;
- bytes of 0x80 and above in the request target are accepted (``url.ParseRequestURI``
  refuses only control bytes), and the path means the same as with them percent-escaped;
  a ``%`` in the path that does not start a two-digit hex escape is a ``400``.

Every error answer carries ``Connection: close``, and the connection closes after it.
"""

from __future__ import annotations

import re

ERROR_HEADERS = b"\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

BAD_REQUEST = b"HTTP/1.1 400 Bad Request" + ERROR_HEADERS + b"400 Bad Request"
"""Go's answer to a request it cannot read (no detail: ``conn.serve``'s default case)."""

UNSUPPORTED_TRANSFER_ENCODING = (
    b"HTTP/1.1 501 Not Implemented" + ERROR_HEADERS + b"Unsupported transfer encoding"
)

OPTIONS_STAR_HEADERS = [(b"content-length", b"0")]
"""The headers of Go's answer to ``OPTIONS *`` (``globalOptionsHandler``), status 200."""


def status_error(code: int, phrase: str, text: str) -> bytes:
    """Go's answer for a ``statusError``: ``HTTP/1.1 <code> <phrase>: <text>``, the same
    words as the body, plain text, ``Connection: close``, no ``Content-Length``."""
    words = f"{code} {phrase}: {text}".encode()
    return b"HTTP/1.1 " + words + ERROR_HEADERS + words


MISSING_HOST = status_error(400, "Bad Request", "missing required Host header")
MALFORMED_HOST = status_error(400, "Bad Request", "malformed Host header")
UNSUPPORTED_VERSION = status_error(
    505, "HTTP Version Not Supported", "unsupported protocol version"
)


def expectation_failed(http_version: str) -> bytes:
    """Go's ``sendExpectationFailed``: 417 with ``Connection: close`` and an empty body,
    in the request's protocol version (``HTTP/1.0`` for a 1.0 request)."""
    proto = b"HTTP/1.0" if http_version == "1.0" else b"HTTP/1.1"
    return proto + b" 417 Expectation Failed\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"


# httpguts.ValidHostHeader: the bytes a Host value may hold (RFC 3986 reg-name, IP-literal
# brackets, port colon, and '%' for zone identifiers); an empty value is valid
_HOST_OK = re.compile(rb"[0-9A-Za-z!$%&'()*+,\-.:;=\[\]_~]*")
_HOST_CACHE_LIMIT = 256
VALID_HOSTS: dict[bytes, bool] = {}
"""``valid_host``'s decisions so far (at most ``_HOST_CACHE_LIMIT`` of them: a stream of
distinct values cannot grow it); a caller may look a value up here first."""


def valid_host(value: bytes) -> bool:
    """Whether ``httpguts.ValidHostHeader`` accepts this ``Host`` value (remembered in
    ``VALID_HOSTS``)."""
    ok = VALID_HOSTS.get(value)
    if ok is None:
        ok = _HOST_OK.fullmatch(value) is not None
        if len(VALID_HOSTS) >= _HOST_CACHE_LIMIT:
            VALID_HOSTS.clear()
        VALID_HOSTS[value] = ok
    return ok


def version_refusal(version: str) -> bytes | None:
    """Go's answer to a request of this HTTP version (``"1.1"``, as httptools gives it),
    or None when it is served (any 1.x: ``http1ServerSupportsRequest``). A request line
    without a version (llhttp reads it as 0.9) is malformed to Go: 400."""
    if version.startswith("1."):
        return None
    return BAD_REQUEST if version == "0.9" else UNSUPPORTED_VERSION


def _token_boundary(byte: int) -> bool:
    return byte in (0x20, 0x2C, 0x09)  # ' ', ',', '\t'


def has_token(value: bytes, token: bytes) -> bool:
    """Go's ``hasToken``: ``token`` (lower case) occurs in ``value``, ignoring case, with a
    space, comma or tab (or either end) on each side."""
    lowered = value.lower()
    start = lowered.find(token)
    while start >= 0:
        end = start + len(token)
        if (start == 0 or _token_boundary(lowered[start - 1])) and (
            end == len(lowered) or _token_boundary(lowered[end])
        ):
            return True
        start = lowered.find(token, start + 1)
    return False


def transfer_encoding_supported(values: list[bytes]) -> bool:
    """Go's ``parseTransferEncoding`` for HTTP/1.1: exactly one ``Transfer-Encoding`` line,
    whose value is ``chunked`` in any case (surrounding blanks aside)."""
    return len(values) == 1 and values[0].strip(b" \t").lower() == b"chunked"


_BAD_ESCAPE = re.compile(rb"%(?![0-9A-Fa-f]{2})")


def bad_path_escape(target: bytes) -> bool:
    """Whether the path of a request target holds a ``%`` that is not followed by two hex
    digits (``url.ParseRequestURI`` refuses it: ``invalid URL escape``; the query is not
    checked there)."""
    query = target.find(b"?")
    path = target if query < 0 else target[:query]
    return b"%" in path and _BAD_ESCAPE.search(path) is not None


# a request line whose target holds bytes of 0x80 and above: method token, one space,
# the target, one space, an HTTP version
_REQUEST_LINE = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+ ([^ \r\n]+) HTTP/[0-9]\.[0-9]\r?")
_HIGH_BYTE = re.compile(rb"[\x80-\xff]")


def _escape_byte(match: re.Match[bytes]) -> bytes:
    return b"%%%02X" % match.group()[0]


def escape_request_target(data: bytes) -> bytes:
    """``data`` (input that starts with a request line) with each byte of 0x80 and above in
    the request target of its first line percent-escaped, so that a parser that refuses
    such bytes reads the target Go reads. ``data`` itself when its first line is not
    complete, not a request line, or holds no such byte."""
    end = data.find(b"\n")
    if end < 0:
        return data
    line = data[:end]
    if line.isascii():
        return data
    match = _REQUEST_LINE.fullmatch(line)
    if match is None:
        return data
    start, stop = match.span(1)
    return data[:start] + _HIGH_BYTE.sub(_escape_byte, data[start:stop]) + data[stop:]
