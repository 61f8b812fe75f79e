"""Where the embedded API server listens, and what that is safe to do.

Without authentication the server binds to loopback unless told otherwise:
``check_bind`` refuses a non-loopback address (a wildcard such as ``0.0.0.0`` or ``::``,
a LAN address, a name resolving to one) unless authentication is on or the caller opted
in, and
``exposure_warning`` is the warning to give on every start when it did. A client must
never be handed a wildcard address: ``client_host`` turns ``0.0.0.0`` into ``127.0.0.1``
and ``::`` into ``::1``.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass


@dataclass(frozen=True)
class BindAddress:
    """A host as given (``host``) and the numeric address a socket binds for it."""

    host: str
    family: socket.AddressFamily
    address: str

    @property
    def is_loopback(self) -> bool:
        """Only this machine can connect (127.0.0.0/8, ::1, or IPv4-mapped loopback)."""
        ip = ipaddress.ip_address(self.address)
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            return ip.ipv4_mapped.is_loopback
        return ip.is_loopback

    @property
    def is_wildcard(self) -> bool:
        """The address means every interface (``0.0.0.0`` or ``::``)."""
        return ipaddress.ip_address(self.address).is_unspecified

    def client_host(self) -> str:
        """The host a client on this machine should use: loopback for a wildcard, else ``host``."""
        if self.is_wildcard:
            return "::1" if self.family == socket.AF_INET6 else "127.0.0.1"
        return self.host


def resolve(host: str) -> BindAddress:
    """The address ``host`` binds to: an IP literal as is (``[::1]`` brackets allowed), an
    empty host as ``0.0.0.0``, a name through the resolver (its first IPv4 address, else
    its first IPv6 one). Raises ``ValueError`` for a name that does not resolve."""
    literal = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if literal == "":
        return BindAddress(host, socket.AF_INET, "0.0.0.0")
    try:
        ip = ipaddress.ip_address(literal.split("%", 1)[0])
    except ValueError:
        pass
    else:
        family = socket.AF_INET6 if ip.version == 6 else socket.AF_INET
        return BindAddress(literal, family, literal)
    try:
        infos = socket.getaddrinfo(literal, None, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise ValueError(
            f"host {host!r} does not resolve: {getattr(exc, 'strerror', None) or exc}"
        ) from None
    for wanted in (socket.AF_INET, socket.AF_INET6):
        for family, _, _, _, sockaddr in infos:
            if family == wanted:
                return BindAddress(literal, family, str(sockaddr[0]))
    raise ValueError(f"host {host!r} resolves to no IPv4 or IPv6 address")


def refusal(bind: BindAddress, opt_in: str) -> str:
    """Why binding ``bind`` without authentication is refused, and how to insist (``opt_in``)."""
    resolved = "" if bind.address == bind.host else f" (it resolves to {bind.address})"
    return (
        f"{bind.host or '0.0.0.0'} is not a loopback address{resolved}, and the embedded API "
        "server has no authentication on: anyone who can reach the port could read and write "
        "every object, Secrets included. Keep the default 127.0.0.1 (reach it from elsewhere "
        "through an SSH tunnel), turn authentication on (TLS with client certificates, or a "
        f"token file), or pass {opt_in} if you mean it"
    )


def check_bind(bind: BindAddress, *, allowed: bool, opt_in: str) -> None:
    """Raise ``ValueError(refusal(...))`` when ``bind`` is not loopback and ``allowed`` is false."""
    if not bind.is_loopback and not allowed:
        raise ValueError(refusal(bind, opt_in))


def exposure_warning(bind: BindAddress, port: int) -> str:
    """The warning for a server listening on a non-loopback address without authentication."""
    where = (
        f"[{bind.address}]:{port}" if bind.family == socket.AF_INET6 else f"{bind.address}:{port}"
    )
    return (
        f"the API server listens on {where}, which is not loopback, and has NO authentication: "
        "anyone who can reach this port can read and write every object, Secrets included"
    )
