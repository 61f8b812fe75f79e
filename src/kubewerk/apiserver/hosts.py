"""Which ``Host`` and ``Origin`` headers the embedded server answers while it has no
authentication.

A web page cannot make a browser send a request to ``127.0.0.1`` with a foreign ``Host``,
but it can point a name it controls at ``127.0.0.1`` (DNS rebinding) and then read and
write through it: the browser sends ``Host: attacker.example``. Refusing every ``Host``
that is not a loopback name or address (or one the user allowed) closes that door.

A page can also write without reading: ``fetch("http://127.0.0.1:8001/...", {method:
"POST", mode: "no-cors", body: blob})`` sends a JSON body with no ``Content-Type`` (read as
JSON, as kube-apiserver reads it) and a loopback ``Host``, and needs no CORS preflight.
Browsers name the page's origin in an ``Origin`` header on every such request (every
method but GET and HEAD, and every WebSocket handshake); clients that are not browsers
(kubectl, client libraries) send none. So a request with an ``Origin`` is answered only
when that origin's host is a loopback name or address or one of the ``extra`` names;
``null`` (sandboxed frames, ``file:`` pages) and anything unparsable are refused. ``*``
among the extra names allows every ``Host`` but no foreign origin.

Loopback is ``localhost`` and ``*.localhost`` (browsers resolve those to loopback
themselves, RFC 6761), any address in 127.0.0.0/8, and ``[::1]``; each with or without a
port, case-insensitive, with or without a trailing dot. A request without a ``Host``
header (HTTP/1.0), or with an empty one, is answered: no browser sends either, and Go's
server (kube-apiserver's) serves both.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

# decisions are cached per header value; the cache is bounded so that a stream of
# distinct hostile values cannot grow it
_CACHE_LIMIT = 256


class HostPolicy:
    """Decides whether a ``Host`` header value, and a web page's ``Origin``, may be answered.

    ``extra`` are further host names or addresses (without port) to allow, in ``Host`` and
    in ``Origin``; ``"*"`` among them allows every host (the user's explicit choice, e.g.
    behind their own proxy) but no foreign origin.
    """

    def __init__(self, extra: Iterable[str] = ()) -> None:
        names = {_normalise(name) for name in extra if name.strip()}
        self.allow_all = "*" in names
        self.extra = frozenset(names - {"*"})
        self._decided: dict[bytes, bool] = {}
        self._origins: dict[bytes, bool] = {}

    def allows(self, host: bytes | None) -> bool:
        """Whether a request with this ``Host`` value (raw header bytes, or None) is answered
        (always when there is none or it is empty)."""
        if not host or self.allow_all:
            return True
        decided = self._decided.get(host)
        if decided is None:
            decided = self._decide(host)
            if len(self._decided) >= _CACHE_LIMIT:
                self._decided.clear()
            self._decided[host] = decided
        return decided

    def allows_origin(self, origin: bytes) -> bool:
        """Whether a request a web page sent with this ``Origin`` value (raw header bytes)
        is answered: its scheme is ``http`` or ``https`` and its host a loopback name or
        address or one of ``extra`` (``*`` does not count: see the module doc)."""
        decided = self._origins.get(origin)
        if decided is None:
            decided = self._decide_origin(origin)
            if len(self._origins) >= _CACHE_LIMIT:
                self._origins.clear()
            self._origins[origin] = decided
        return decided

    def _decide_origin(self, raw: bytes) -> bool:
        try:
            text = raw.decode("ascii").strip()
        except UnicodeDecodeError:
            return False
        scheme, sep, rest = text.partition("://")
        if not sep or scheme.lower() not in ("http", "https") or not rest or "/" in rest:
            return False
        if "@" in rest or "?" in rest or "#" in rest:
            return False
        return self._decide_host(rest)

    def _decide(self, raw: bytes) -> bool:
        try:
            text = raw.decode("ascii")
        except UnicodeDecodeError:
            return False
        return self._decide_host(text)

    def _decide_host(self, text: str) -> bool:
        """Whether ``text`` (``name``, ``name:port``, ``[v6]``, ``[v6]:port``) names a
        loopback host or an extra one."""
        name = _host_part(text)
        if name is None:
            return False
        name = _normalise(name)
        if name in self.extra or name == "localhost" or name.endswith(".localhost"):
            return True
        try:
            address = ipaddress.ip_address(name.strip("[]"))
        except ValueError:
            return False
        return address.is_loopback or str(address) in self.extra

    def refusal(self, host: bytes) -> str:
        """The message a refused request gets."""
        shown = host.decode("latin-1")[:256]
        return (
            f'the Host "{shown}" is not allowed: without authentication the embedded API server '
            "answers only loopback names and addresses (localhost, 127.0.0.1, [::1]); "
            "allow more with `kubewerk up --allow-host NAME`"
        )

    def origin_refusal(self, origin: bytes) -> str:
        """The message a request from a refused web page gets."""
        shown = origin.decode("latin-1")[:256]
        return (
            f'the Origin "{shown}" is not allowed: without authentication the embedded API '
            "server answers web pages only from loopback origins (http://localhost, "
            "http://127.0.0.1, http://[::1], any port), so that no other page can write to it; "
            "allow a page's host with `kubewerk up --allow-host NAME`"
        )


def _host_part(text: str) -> str | None:
    """The host of a ``Host`` value (``name``, ``name:port``, ``[v6]``, ``[v6]:port``)."""
    text = text.strip()
    if not text:
        return None
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            return None
        rest = text[end + 1 :]
        if rest and not (rest.startswith(":") and rest[1:].isdigit()):
            return None
        return text[: end + 1]
    name, sep, port = text.rpartition(":")
    if sep:
        if not port.isdigit() or ":" in name:
            return None
        return name
    return text


def _normalise(name: str) -> str:
    name = name.strip().lower().rstrip(".")
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    try:
        return str(ipaddress.ip_address(name))
    except ValueError:
        return name
