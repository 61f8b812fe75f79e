"""Which HTTP proxy the API client goes through, decided the way client-go decides it.

client-go (``k8s.io/client-go/tools/clientcmd``) uses a cluster's ``proxy-url`` when the
kubeconfig sets one (``http.ProxyURL``: every request, loopback included); otherwise it
uses Go's ``http.ProxyFromEnvironment`` (``golang.org/x/net/http/httpproxy``):

- ``HTTPS_PROXY`` (else ``https_proxy``) for ``https`` servers, ``HTTP_PROXY`` (else
  ``http_proxy``) for ``http`` servers; an upper-case variable that is set and not empty
  wins over the lower-case one. There is no fallback from one scheme to the other.
- A value may be a URL (``http``, ``https``, ``socks5``) or a bare ``host[:port]``
  (``http`` assumed). A value that is neither is reported (ConfigError) when it would
  be used; Go ignores it or retries it with ``http://`` prepended, which yields a
  mangled proxy host ("http://proxy:bad" becomes host "http"), so kubewerk says so.
- ``HTTP_PROXY`` is not used when ``REQUEST_METHOD`` is set (a CGI process; "httpoxy").
- ``localhost`` and loopback addresses (127.0.0.0/8, ::1) never use the environment proxy.
- ``NO_PROXY`` (else ``no_proxy``) is a comma-separated list of: ``*`` (no proxy at all),
  IP addresses (``1.2.3.4``, ``::1``), CIDR blocks (``10.0.0.0/8``), domain names
  (``example.com`` matches it and every subdomain; ``.example.com`` and ``*.example.com``
  subdomains only), each optionally with a port (``1.2.3.4:80``, ``[::1]:6443``,
  ``example.com:443``) that must then match too. Entries compare case-insensitively;
  malformed ones are skipped.

kubewerk speaks HTTP to ``http`` and ``https`` proxies (``https``: TLS to the proxy
itself). A ``socks5`` proxy is refused with a :class:`~kubewerk.client.errors.ConfigError`
that names the limitation, never silently bypassed.
"""

from __future__ import annotations

import base64
import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import SplitResult, unquote, urlsplit

from kubewerk.client.errors import ConfigError

__all__ = ["EnvironmentProxy", "NoProxy", "ProxyURL", "parse_proxy_url", "select_proxy"]

_DEFAULT_PORTS = {"http": 80, "https": 443, "socks5": 1080}
_PROXY_SCHEMES = frozenset(_DEFAULT_PORTS)
SOCKS5_UNSUPPORTED = (
    "socks5 proxies are not supported by kubewerk (only http and https proxies are)"
)

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True, slots=True)
class ProxyURL:
    """A usable proxy: ``scheme`` is ``http`` or ``https`` (how to talk to the proxy),
    ``host`` has no brackets, ``port`` is always set, ``username``/``password`` are
    percent-decoded (``None``: the URL carried no user information)."""

    scheme: str
    host: str
    port: int
    username: str | None = None
    password: str | None = field(default=None, repr=False)

    @property
    def authorization(self) -> str | None:
        """The ``Proxy-Authorization`` value (``Basic`` with user:password) when the URL
        names a user."""
        if self.username is None:
            return None
        token = base64.b64encode(f"{self.username}:{self.password or ''}".encode()).decode("ascii")
        return f"Basic {token}"

    @property
    def display(self) -> str:
        """The URL for messages: scheme, user, host and port; a password shows as ``xxxxx``."""
        user = ""
        if self.username is not None:
            user = self.username + (":xxxxx" if self.password else "") + "@"
        return f"{self.scheme}://{user}{_join_host_port(self.host, self.port)}"

    def __str__(self) -> str:
        return self.display


def _join_host_port(host: str, port: int | str) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _check_parsed(value: str, parts: SplitResult) -> ProxyURL:
    """A ProxyURL from a split URL whose scheme is one of http, https, socks5; raises
    ValueError (the reason) when the URL is unusable."""
    if parts.scheme == "socks5":
        raise ValueError(SOCKS5_UNSUPPORTED)
    if any(c.isspace() or ord(c) < 0x20 or ord(c) == 0x7F for c in value):
        raise ValueError("it contains whitespace or a control character")
    host = parts.hostname
    if not host:
        raise ValueError("it names no host")
    port = parts.port  # ValueError for a port that is not a number in range
    username = unquote(parts.username) if parts.username is not None else None
    password = unquote(parts.password) if parts.password is not None else None
    return ProxyURL(parts.scheme, host, port or _DEFAULT_PORTS[parts.scheme], username, password)


def parse_proxy_url(value: str) -> ProxyURL:
    """An explicit proxy URL (kubeconfig ``proxy-url``), checked as clientcmd checks it:
    the scheme must be http, https or socks5. Raises ValueError with the reason (the
    caller adds where the value came from); socks5 is refused with a reason that says
    kubewerk does not support it."""
    try:
        parts = urlsplit(value)
    except ValueError as exc:
        raise ValueError(f"it is not a valid URL ({exc})") from None
    if parts.scheme not in _PROXY_SCHEMES:
        raise ValueError(f"unsupported scheme {parts.scheme!r}, must be http, https, or socks5")
    return _check_parsed(value, parts)


def _parse_env_proxy(value: str) -> ProxyURL:
    """An environment proxy value: a URL (http, https) or a bare ``host[:port]`` (http
    assumed). Raises ValueError with the reason for anything else, socks5 included."""
    return parse_proxy_url(value if "://" in value else "http://" + value)


def _split_host_port(text: str) -> tuple[str, str] | None:
    """``host:port`` or ``[host]:port`` split (brackets removed), None when ``text`` has no
    port or too many colons (Go's ``net.SplitHostPort`` rules)."""
    if text.startswith("["):
        end = text.find("]")
        if end < 0 or text[end + 1 : end + 2] != ":":
            return None
        host, port = text[1:end], text[end + 2 :]
    else:
        colon = text.rfind(":")
        if colon < 0:
            return None
        host, port = text[:colon], text[colon + 1 :]
        if ":" in host:
            return None
    if "[" in port or "]" in port:
        return None
    return host, port


def _parse_ip(text: str) -> IPAddress | None:
    """The IP address ``text`` spells (IPv4-mapped IPv6 reduced to IPv4, as Go
    compares), else None."""
    if "%" in text:  # Go's ParseIP takes no zone
        return None
    try:
        ip = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


def _idna(host: str) -> str:
    """A host name's ASCII (punycode) form, label by label; unchanged when already ASCII
    or not encodable."""
    if host.isascii():
        return host
    try:
        return ".".join(
            label.encode("idna").decode("ascii") if label else label for label in host.split(".")
        )
    except UnicodeError:
        return host


def _cidr(text: str) -> IPNetwork | None:
    address, slash, bits = text.partition("/")
    if not slash or not bits.isdigit() or _parse_ip(address) is None:
        return None
    try:
        return ipaddress.ip_network(text, strict=False)
    except ValueError:
        return None


class NoProxy:
    """A parsed ``NO_PROXY`` list (see the module docstring); :meth:`matches` says whether
    a server is excluded from proxying. Parsed once; matching allocates nothing but the
    lower-cased host."""

    __slots__ = ("_all", "_cidrs", "_domains", "_ips")

    def __init__(self, spec: str) -> None:
        self._all = False
        self._cidrs: list[IPNetwork] = []
        self._ips: list[tuple[IPAddress, str]] = []
        self._domains: list[tuple[str, str, bool]] = []  # (".suffix", port, also the bare name)
        for raw in spec.split(","):
            entry = raw.strip().lower()
            if not entry:
                continue
            if entry == "*":
                self._all = True
                return
            network = _cidr(entry)
            if network is not None:
                self._cidrs.append(network)
                continue
            split = _split_host_port(entry)
            host, port = split if split is not None else (entry, "")
            if split is not None and not host:
                continue  # ":80": no host
            ip = _parse_ip(host)
            if ip is not None:
                self._ips.append((ip, port))
                continue
            if host.startswith("*."):
                host = host[1:]
            bare = not host.startswith(".")
            if bare:
                host = "." + host
            self._domains.append((_idna(host), port, bare))

    def matches(self, host: str, port: int) -> bool:
        """Whether ``host`` (a name or an IP address, no brackets) on ``port`` is listed."""
        if self._all:
            return True
        name = host.strip().lower()
        port_text = str(port)
        ip = _parse_ip(name)
        if ip is not None:
            for network in self._cidrs:
                if ip in network:
                    return True
            for listed, listed_port in self._ips:
                if listed == ip and (not listed_port or listed_port == port_text):
                    return True
        for suffix, listed_port, bare in self._domains:
            if (name.endswith(suffix) or (bare and name == suffix[1:])) and (
                not listed_port or listed_port == port_text
            ):
                return True
        return False


def _env(environ: Mapping[str, str], upper: str) -> str:
    return environ.get(upper) or environ.get(upper.lower()) or ""


@dataclass(frozen=True)
class EnvironmentProxy:
    """The proxy settings of an environment (Go's ``httpproxy.FromEnvironment``), parsed once."""

    http: ProxyURL | None
    https: ProxyURL | None
    no_proxy: NoProxy
    cgi: bool
    http_error: str | None = None  # why HTTP_PROXY is unusable (invalid, socks5)
    https_error: str | None = None

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> EnvironmentProxy:
        """Read ``HTTP(S)_PROXY``, ``NO_PROXY`` (upper case first) and ``REQUEST_METHOD``."""
        env = os.environ if environ is None else environ
        parsed: dict[str, ProxyURL | None] = {}
        errors: dict[str, str | None] = {}
        for name in ("HTTP_PROXY", "HTTPS_PROXY"):
            value = _env(env, name)
            try:
                parsed[name] = _parse_env_proxy(value) if value else None
                errors[name] = None
            except ValueError as exc:
                parsed[name] = None
                errors[name] = f"{name} {value!r}: {exc}"
        return cls(
            parsed["HTTP_PROXY"],
            parsed["HTTPS_PROXY"],
            NoProxy(_env(env, "NO_PROXY")),
            bool(env.get("REQUEST_METHOD")),
            errors["HTTP_PROXY"],
            errors["HTTPS_PROXY"],
        )

    def proxy_for(self, scheme: str, host: str, port: int) -> ProxyURL | None:
        """The proxy for a server (``http``/``https``, host without brackets, port), or
        None for a direct connection. Raises ConfigError when the variable that applies
        is invalid or names a socks5 proxy (not supported)."""
        if scheme == "https":
            proxy, error = self.https, self.https_error
        elif scheme == "http":
            if self.cgi:
                return None  # Go refuses HTTP_PROXY in a CGI process; nothing is proxied
            proxy, error = self.http, self.http_error
        else:
            return None
        if proxy is None and error is None:
            return None
        if not _use_proxy(host, port, self.no_proxy):
            return None
        if error is not None:
            raise ConfigError(f"the proxy environment variable {error}")
        return proxy


def _use_proxy(host: str, port: int, no_proxy: NoProxy) -> bool:
    if host == "localhost":
        return False
    ip = _parse_ip(host)
    if ip is not None and ip.is_loopback:
        return False
    return not no_proxy.matches(_idna(host), port)


def select_proxy(
    proxy_url: str | None,
    scheme: str,
    host: str,
    port: int,
    environ: Mapping[str, str] | None = None,
) -> ProxyURL | None:
    """The proxy for one API server, as client-go picks it: ``proxy_url`` (the kubeconfig's,
    applied to every server, loopback included) when set, else the environment (for
    ``scheme``, honouring ``NO_PROXY`` and the loopback rule). Raises ConfigError for an
    invalid or socks5 ``proxy_url`` or a socks5 environment proxy."""
    if proxy_url:
        try:
            return parse_proxy_url(proxy_url)
        except ValueError as exc:
            raise ConfigError(f"invalid proxy-url {proxy_url!r}: {exc}") from None
    return EnvironmentProxy.from_environ(environ).proxy_for(scheme, host, port)
