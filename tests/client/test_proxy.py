"""The client through HTTP proxies, against a small real asyncio proxy (CONNECT tunnels,
absolute-form forwarding, optional Basic auth, a name map so "kube.test" reaches
loopback) and the embedded API server (behind a TLS terminator for https): CRUD and
watch, proxy auth, Go's NO_PROXY rules, loopback bypass, proxy-url over the environment,
and the error messages."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import socket
import ssl
import textwrap
from collections.abc import AsyncIterator, Coroutine
from pathlib import Path

import pytest
import uvloop

from kubewerk.apiserver.server import EmbeddedServer
from kubewerk.client import (
    CONFIGMAP,
    Client,
    ClientConfig,
    ConfigError,
    RetryPolicy,
    ServerUnreachable,
)
from kubewerk.client.config import load_kubeconfig
from kubewerk.client.proxy import EnvironmentProxy, NoProxy, ProxyURL, parse_proxy_url, select_proxy
from kubewerk.core.errors import ApiError
from tests.client.pki import issue, server_context

NO_RETRY = RetryPolicy(max_retries=0)
PROXY_VARS = (
    "HTTP_PROXY",
    "http_proxy",
    "HTTPS_PROXY",
    "https_proxy",
    "NO_PROXY",
    "no_proxy",
    "REQUEST_METHOD",
)


@pytest.fixture
async def aserver() -> AsyncIterator[EmbeddedServer]:
    """The embedded server, also answering the name the proxy maps to it ("kube.test"):
    without authentication it otherwise answers loopback Host names only."""
    async with EmbeddedServer("memory", bookmark_interval=0.5, allowed_hosts=["kube.test"]) as srv:
        yield srv


@pytest.fixture(autouse=True)
def clean_proxy_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test starts without proxy variables (the machine's own must not leak in)."""
    for name in PROXY_VARS:
        monkeypatch.delenv(name, raising=False)


# -- a small HTTP proxy -------------------------------------------------------------------


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError, OSError, ssl.SSLError):
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    with contextlib.suppress(ConnectionError, OSError, RuntimeError, ssl.SSLError):
        writer.close()


async def _read_head(reader: asyncio.StreamReader) -> tuple[str, list[tuple[str, str]]] | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
        return None
    lines = head.decode("latin-1").split("\r\n")
    headers = []
    for line in lines[1:]:
        if line:
            name, _, value = line.partition(":")
            headers.append((name.strip(), value.strip()))
    return lines[0], headers


class _LoopbackServer:
    """A stream server on 127.0.0.1 (TLS when ``ssl_context`` is given) whose handlers may
    spawn helper tasks; leaving ``async with`` cancels them and closes the server."""

    def __init__(self, ssl_context: ssl.SSLContext | None) -> None:
        self.ssl_context = ssl_context
        self.port = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        raise NotImplementedError

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=self.ssl_context)
        self.port = self._server.sockets[0].getsockname()[1]

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()

    def _spawn(self, coro: Coroutine[object, object, None]) -> asyncio.Task[None]:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task


class Proxy(_LoopbackServer):
    """An HTTP proxy on 127.0.0.1 (TLS to it when ``ssl_context`` is given). CONNECT opens a
    tunnel; an absolute-form request is forwarded (keep-alive, one upstream per client
    connection). ``auth`` ("user:password") makes it answer 407 without the right
    ``Proxy-Authorization``. ``hosts`` maps names to loopback ("kube.test" -> 127.0.0.1).
    Counts client connections, tunnels, forwarded requests and 407 answers."""

    def __init__(
        self, *, auth: str | None = None, ssl_context: ssl.SSLContext | None = None
    ) -> None:
        super().__init__(ssl_context)
        self.auth = None if auth is None else "Basic " + base64.b64encode(auth.encode()).decode()
        self.hosts = {"kube.test": "127.0.0.1"}
        self.connections = 0
        self.tunnels = 0
        self.forwarded = 0
        self.refused = 0
        self.request_lines: list[str] = []
        self.proxy_auth_seen: list[str | None] = []
        self.forwarded_headers: list[list[tuple[str, str]]] = []
        self._writers: set[asyncio.StreamWriter] = set()

    def drop_connections(self) -> None:
        """Close every client connection (tunnels and forwarding connections) at once."""
        for writer in list(self._writers):
            writer.close()

    async def __aenter__(self) -> Proxy:
        await self.start()
        return self

    def url(self, scheme: str = "http", userinfo: str = "") -> str:
        return f"{scheme}://{userinfo + '@' if userinfo else ''}127.0.0.1:{self.port}"

    def _upstream(self, authority: str) -> tuple[str, int]:
        host, _, port = authority.rpartition(":")
        host = host.strip("[]")
        return self.hosts.get(host, host), int(port)

    def _authorised(self, headers: list[tuple[str, str]]) -> bool:
        given = next((v for k, v in headers if k.lower() == "proxy-authorization"), None)
        self.proxy_auth_seen.append(given)
        return self.auth is None or given == self.auth

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self._writers.add(writer)
        upstream: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        try:
            while (got := await _read_head(reader)) is not None:
                line, headers = got
                self.request_lines.append(line)
                method, target, _ = line.split(" ", 2)
                if not self._authorised(headers):
                    self.refused += 1
                    writer.write(
                        b"HTTP/1.1 407 Proxy Authentication Required\r\n"
                        b'Proxy-Authenticate: Basic realm="test"\r\nContent-Length: 0\r\n\r\n'
                    )
                    await writer.drain()
                    continue
                if method == "CONNECT":
                    up_reader, up_writer = await asyncio.open_connection(*self._upstream(target))
                    self.tunnels += 1
                    writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
                    await writer.drain()
                    self._spawn(_pipe(up_reader, writer))
                    await _pipe(reader, up_writer)
                    return
                # absolute-form forwarding: http://host:port/path -> /path upstream
                assert target.startswith("http://"), target
                authority, _, path = target[len("http://") :].partition("/")
                if upstream is None:
                    upstream = await asyncio.open_connection(*self._upstream(authority))
                    self._spawn(_pipe(upstream[0], writer))
                kept = [(k, v) for k, v in headers if k.lower() != "proxy-authorization"]
                self.forwarded_headers.append(kept)
                length = int(next((v for k, v in kept if k.lower() == "content-length"), "0"))
                body = await reader.readexactly(length)
                head = (
                    f"{method} /{path} HTTP/1.1\r\n"
                    + "".join(f"{k}: {v}\r\n" for k, v in kept)
                    + "\r\n"
                )
                upstream[1].write(head.encode("latin-1") + body)
                await upstream[1].drain()
                self.forwarded += 1
        except (ConnectionError, asyncio.IncompleteReadError, ssl.SSLError):
            pass
        finally:
            self._writers.discard(writer)
            if upstream is not None:
                upstream[1].close()
            writer.close()


class TLSFront(_LoopbackServer):
    """A TLS terminator in front of the embedded API server (an https API server);
    counts connections."""

    def __init__(self, ctx: ssl.SSLContext, backend_port: int) -> None:
        super().__init__(ctx)
        self.backend_port = backend_port
        self.connections = 0

    async def __aenter__(self) -> TLSFront:
        await self.start()
        return self

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.backend_port)
        self._spawn(_pipe(up_reader, writer))
        await _pipe(reader, up_writer)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A throwaway CA; an API server certificate for DNS:kube.test, a proxy certificate
    for IP:127.0.0.1."""
    return issue(
        tmp_path_factory.mktemp("proxy-tls"),
        "kubewerk-proxy-test-ca",
        {"server": "DNS:kube.test", "proxy": "IP:127.0.0.1"},
    )


async def crud_and_watch(client: Client) -> None:
    """Create, read, list, patch, delete a ConfigMap and see the changes on a watch."""
    start = await client.list(CONFIGMAP, "default")
    events: list[tuple[str, str]] = []

    async def watch() -> None:
        async for ev in client.watch(
            CONFIGMAP, "default", resource_version=start.resource_version, timeout_seconds=10
        ):
            if ev.type == "BOOKMARK":
                continue
            events.append((ev.type, ev.object["metadata"]["name"]))
            if ev.type == "DELETED":
                return

    watcher = asyncio.create_task(watch())
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "via-proxy"},
        "data": {"a": "1"},
    }
    created = await client.create(cm)
    assert created["metadata"]["uid"]
    assert (await client.get(CONFIGMAP, "via-proxy", "default"))["data"] == {"a": "1"}
    assert [o["metadata"]["name"] for o in (await client.list(CONFIGMAP, "default")).items] == [
        "via-proxy"
    ]
    patched = await client.patch(CONFIGMAP, "via-proxy", {"data": {"a": "2"}}, "default")
    assert patched["data"] == {"a": "2"}
    await client.delete(CONFIGMAP, "via-proxy", "default")
    await asyncio.wait_for(watcher, 10)
    assert events == [("ADDED", "via-proxy"), ("MODIFIED", "via-proxy"), ("DELETED", "via-proxy")]


# -- the NO_PROXY matcher and the environment -------------------------------------------------

NO_PROXY_TABLE = [
    # (NO_PROXY, host, port, excluded)
    ("example.com", "example.com", 443, True),
    ("example.com", "api.example.com", 443, True),  # a name matches its subdomains
    ("example.com", "notexample.com", 443, False),  # ...on a label boundary only
    (".example.com", "example.com", 443, False),  # a leading dot: subdomains only
    (".example.com", "a.b.example.com", 443, True),
    ("*.example.com", "example.com", 443, False),
    ("*.example.com", "x.example.com", 443, True),
    ("EXAMPLE.com", "Api.Example.COM", 443, True),  # case-insensitive
    (" foo.com , bar.com ", "bar.com", 80, True),  # spaces around entries
    ("example.com:6443", "example.com", 6443, True),  # a port must match too
    ("example.com:6443", "example.com", 443, False),
    ("10.0.0.1", "10.0.0.1", 443, True),
    ("10.0.0.1", "10.0.0.2", 443, False),
    ("10.0.0.1:6443", "10.0.0.1", 443, False),
    ("10.0.0.1:6443", "10.0.0.1", 6443, True),
    ("10.0.0.0/8", "10.200.3.4", 443, True),
    ("10.0.0.0/8", "11.0.0.1", 443, False),
    ("10.1.2.3/8", "10.9.9.9", 443, True),  # host bits in a CIDR are ignored, as ParseCIDR does
    ("2001:db8::/32", "2001:db8::1", 443, True),
    ("2001:db8::1", "2001:db8::1", 443, True),
    ("[2001:db8::1]:6443", "2001:db8::1", 6443, True),
    ("[2001:db8::1]:6443", "2001:db8::1", 443, False),
    ("10.0.0.0/8", "::ffff:10.0.0.1", 443, True),  # IPv4-mapped IPv6 compares as IPv4
    ("*", "anything.at.all", 1, True),
    ("foo.com,*", "bar.com", 1, True),
    ("", "example.com", 443, False),
    (",,", "example.com", 443, False),
    (":80", "example.com", 80, False),  # no host part: skipped
    ("10.0.0.0/8", "kube.10.0.0.0", 443, False),  # a CIDR matches IP addresses only
    ("bücher.example", "xn--bcher-kva.example", 443, True),  # IDNA: compared in ASCII form
]


@pytest.mark.parametrize(("spec", "host", "port", "excluded"), NO_PROXY_TABLE)
def test_no_proxy_matching(spec: str, host: str, port: int, excluded: bool) -> None:
    assert NoProxy(spec).matches(host, port) is excluded


def test_environment_proxy_selection() -> None:
    env = {
        "HTTPS_PROXY": "http://sec.proxy:3128",
        "HTTP_PROXY": "plain.proxy:8080",
        "NO_PROXY": ".internal,10.0.0.0/8",
    }
    ep = EnvironmentProxy.from_environ(env)
    assert ep.proxy_for("https", "kube.example", 443) == ProxyURL("http", "sec.proxy", 3128)
    # a bare host:port is an http proxy
    assert ep.proxy_for("http", "kube.example", 80) == ProxyURL("http", "plain.proxy", 8080)
    assert ep.proxy_for("https", "api.internal", 443) is None
    assert ep.proxy_for("https", "10.3.3.3", 443) is None
    # localhost and loopback never use the environment's proxy, whatever NO_PROXY says
    for host in ("localhost", "127.0.0.1", "127.9.9.9", "::1", "::ffff:127.0.0.1"):
        assert ep.proxy_for("https", host, 6443) is None, host
    assert ep.proxy_for("https", "::2", 443) is not None  # not loopback
    # no fallback from one scheme's variable to the other's
    only_http = EnvironmentProxy.from_environ({"HTTP_PROXY": "http://p:1"})
    assert only_http.proxy_for("https", "kube.example", 443) is None
    # upper case wins; an empty upper-case value lets the lower-case one through
    both = EnvironmentProxy.from_environ(
        {"HTTPS_PROXY": "http://upper:1", "https_proxy": "http://lower:2"}
    )
    assert both.proxy_for("https", "k", 443) == ProxyURL("http", "upper", 1)
    empty_upper = EnvironmentProxy.from_environ(
        {"HTTPS_PROXY": "", "https_proxy": "http://lower:2", "no_proxy": "k"}
    )
    assert empty_upper.proxy_for("https", "x", 443) == ProxyURL("http", "lower", 2)
    assert empty_upper.proxy_for("https", "k", 443) is None  # no_proxy read too
    # a CGI process ignores HTTP_PROXY (httpoxy), not HTTPS_PROXY
    cgi = EnvironmentProxy.from_environ(
        {"HTTP_PROXY": "http://p:1", "HTTPS_PROXY": "http://p:1", "REQUEST_METHOD": "GET"}
    )
    assert cgi.proxy_for("http", "kube.example", 80) is None
    assert cgi.proxy_for("https", "kube.example", 443) is not None
    # default ports, user information percent-decoded
    assert EnvironmentProxy.from_environ({"HTTPS_PROXY": "https://u%40x:p%3Aw@sec"}).proxy_for(
        "https", "k", 443
    ) == ProxyURL("https", "sec", 443, "u@x", "p:w")
    # a value that is no usable proxy URL is reported where it applies (Go would dial a
    # mangled host)
    bad = EnvironmentProxy.from_environ(
        {"HTTPS_PROXY": "http://proxy:notaport", "HTTP_PROXY": "ftp://p:21"}
    )
    with pytest.raises(ConfigError) as info:
        bad.proxy_for("https", "k", 443)
    assert str(info.value).startswith(
        "the proxy environment variable HTTPS_PROXY 'http://proxy:notaport': Port could not be cast"
    )
    with pytest.raises(
        ConfigError,
        match="HTTP_PROXY 'ftp://p:21': unsupported scheme 'ftp', must be http, https, or socks5",
    ):
        bad.proxy_for("http", "k", 80)
    assert bad.proxy_for("https", "localhost", 443) is None


def test_socks5_is_refused_with_a_clear_error() -> None:
    ep = EnvironmentProxy.from_environ(
        {"HTTPS_PROXY": "socks5://127.0.0.1:1080", "NO_PROXY": "skip.me"}
    )
    with pytest.raises(ConfigError) as info:
        ep.proxy_for("https", "kube.example", 443)
    assert str(info.value) == (
        "the proxy environment variable HTTPS_PROXY 'socks5://127.0.0.1:1080': "
        "socks5 proxies are not supported by kubewerk (only http and https proxies are)"
    )
    assert ep.proxy_for("https", "skip.me", 443) is None  # only where it would be used
    assert ep.proxy_for("https", "localhost", 443) is None
    with pytest.raises(ValueError, match="socks5 proxies are not supported by kubewerk"):
        parse_proxy_url("socks5://proxy:1080")


def test_explicit_proxy_url_beats_the_environment_and_covers_loopback() -> None:
    env = {"HTTPS_PROXY": "http://env.proxy:1", "NO_PROXY": "*"}
    assert select_proxy("http://explicit:3128", "https", "127.0.0.1", 6443, env) == ProxyURL(
        "http", "explicit", 3128
    )
    assert select_proxy(None, "https", "kube.example", 443, env) is None  # NO_PROXY=*
    assert select_proxy(
        None, "https", "kube.example", 443, {"HTTPS_PROXY": "http://env.proxy:1"}
    ) == ProxyURL("http", "env.proxy", 1)
    assert (
        str(ProxyURL("http", "p", 1, "me", "secret")) == "http://me:xxxxx@p:1"
    )  # messages never show a password


def write_kubeconfig(path: Path, server: str, proxy_url: str | None) -> Path:
    proxy = f"\n    proxy-url: {proxy_url!r}" if proxy_url is not None else ""
    path.write_text(
        textwrap.dedent(
            """\
            apiVersion: v1
            kind: Config
            current-context: c
            contexts: [{name: c, context: {cluster: k, user: u}}]
            users: [{name: u, user: {token: t}}]
            clusters:
            - name: k
              cluster:
                server: SERVER"""
        ).replace("SERVER", server)
        + proxy
        + "\n"
    )
    return path


@pytest.mark.parametrize(
    ("proxy_url", "message"),
    [
        (
            "ftp://proxy:21",
            "invalid proxy-url 'ftp://proxy:21': unsupported "
            "scheme 'ftp', must be http, https, or socks5",
        ),
        (
            "proxy.corp:3128",
            "invalid proxy-url 'proxy.corp:3128': unsupported "
            "scheme 'proxy.corp', must be http, https, or socks5",
        ),
        ("http://proxy:99999", "invalid proxy-url 'http://proxy:99999': Port out of range 0-65535"),
        ("http://:3128", "invalid proxy-url 'http://:3128': it names no host"),
        (
            "http://[::1:3128",
            "invalid proxy-url 'http://[::1:3128': it is not a valid URL (Invalid IPv6 URL)",
        ),
        (
            "socks5://proxy:1080",
            "invalid proxy-url 'socks5://proxy:1080': socks5 proxies are "
            "not supported by kubewerk (only http and https proxies are)",
        ),
    ],
)
def test_invalid_proxy_url_in_kubeconfig(tmp_path: Path, proxy_url: str, message: str) -> None:
    path = write_kubeconfig(tmp_path / "config", "https://kube.example", proxy_url)
    with pytest.raises(ConfigError) as info:
        load_kubeconfig(path)
    assert str(info.value) == f"kubeconfig {path} cluster 'k': {message}"


def test_proxy_url_is_read_from_kubeconfig(tmp_path: Path) -> None:
    path = write_kubeconfig(
        tmp_path / "config", "https://kube.example", "http://user:pw@proxy.corp:3128"
    )
    assert load_kubeconfig(path).proxy_url == "http://user:pw@proxy.corp:3128"
    assert (
        load_kubeconfig(write_kubeconfig(tmp_path / "c2", "https://kube.example", None)).proxy_url
        is None
    )


# -- through a real proxy ---------------------------------------------------------------------


async def test_http_server_through_proxy_url_forwards_in_absolute_form(
    aserver: EmbeddedServer,
) -> None:
    async with Proxy() as proxy:
        # proxy-url applies to a loopback server too (client-go's http.ProxyURL)
        cfg = ClientConfig(server=aserver.url, proxy_url=proxy.url())
        async with Client(cfg, retry=NO_RETRY) as client:
            await crud_and_watch(client)
        assert proxy.forwarded >= 7 and proxy.tunnels == 0
        assert all(
            line.split(" ")[1].startswith(f"{aserver.url}/api/v1/") for line in proxy.request_lines
        ), proxy.request_lines
        assert proxy.proxy_auth_seen == [None] * len(proxy.request_lines)
        # keep-alive to the proxy: the watch took one connection, the rest shared one
        assert proxy.connections == 2


async def test_https_server_through_env_proxy_tunnels(
    aserver: EmbeddedServer, pki: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    async with TLSFront(server_context(pki, "server"), aserver.port) as front, Proxy() as proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy.url())
        monkeypatch.setenv("NO_PROXY", "example.org,10.0.0.0/8")
        # kube.test resolves nowhere but in the proxy: only a tunnel can reach it
        cfg = ClientConfig(
            server=f"https://kube.test:{front.port}", ca_pem=pki["ca.crt"].read_bytes()
        )
        async with Client(cfg, retry=NO_RETRY) as client:
            await crud_and_watch(client)
            for _ in range(3):
                await client.list(CONFIGMAP, "default")
            # pooled tunnels: one for the watch, one shared by every other request
            assert proxy.tunnels == front.connections == 2
            # the proxy drops its idle tunnel: the pool notices and opens a new one, even for a POST
            proxy.drop_connections()
            await asyncio.sleep(0.05)
            cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "after-drop"}}
            assert (await client.create(cm))["metadata"]["name"] == "after-drop"
            assert proxy.tunnels == 3
        assert proxy.request_lines[0] == f"CONNECT kube.test:{front.port} HTTP/1.1"
        assert set(proxy.request_lines) == {f"CONNECT kube.test:{front.port} HTTP/1.1"}
        assert proxy.forwarded == 0


async def test_env_proxy_is_not_used_for_loopback_or_no_proxy(
    aserver: EmbeddedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with Proxy() as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.url())
        async with Client.from_url(aserver.url, retry=NO_RETRY) as client:  # 127.0.0.1
            await client.list(CONFIGMAP, "default")
        assert proxy.connections == 0
        # a non-loopback name goes through it; NO_PROXY takes it out again
        async with Client.from_url(f"http://kube.test:{aserver.port}", retry=NO_RETRY) as client:
            await client.list(CONFIGMAP, "default")
        assert proxy.forwarded == 1
        assert proxy.request_lines == [
            f"GET http://kube.test:{aserver.port}/api/v1/namespaces/default/configmaps HTTP/1.1"
        ]
        assert dict(proxy.forwarded_headers[0])["Host"] == f"kube.test:{aserver.port}"
        monkeypatch.setenv("NO_PROXY", "kube.test")
        async with Client.from_url(f"http://kube.test:{aserver.port}", retry=NO_RETRY) as client:
            with pytest.raises(ServerUnreachable):  # direct: kube.test does not resolve
                await client.list(CONFIGMAP, "default")
        assert proxy.forwarded == 1


async def test_proxy_url_beats_the_environment(
    aserver: EmbeddedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with Proxy() as env_proxy, Proxy() as explicit:
        monkeypatch.setenv("HTTP_PROXY", env_proxy.url())
        cfg = ClientConfig(server=f"http://kube.test:{aserver.port}", proxy_url=explicit.url())
        async with Client(cfg, retry=NO_RETRY) as client:
            await client.list(CONFIGMAP, "default")
        assert (explicit.forwarded, env_proxy.connections) == (1, 0)


async def test_proxy_authentication(aserver: EmbeddedServer, pki: dict[str, Path]) -> None:
    async with (
        TLSFront(server_context(pki, "server"), aserver.port) as front,
        Proxy(auth="al@ice:p:w d") as proxy,
    ):
        https_server = f"https://kube.test:{front.port}"
        ca = pki["ca.crt"].read_bytes()
        # no credentials: CONNECT refused with 407, reported once (retrying cannot help)
        async with Client(
            ClientConfig(server=https_server, ca_pem=ca, proxy_url=proxy.url())
        ) as client:
            with pytest.raises(ServerUnreachable) as info:
                await client.list(CONFIGMAP, "default")
        assert info.value.why == (
            f"proxy http://127.0.0.1:{proxy.port} refused CONNECT "
            f"kube.test:{front.port}: 407 Proxy Authentication Required"
        )
        assert proxy.refused == 1
        # wrong password
        wrong = proxy.url(userinfo="al%40ice:nope")
        async with Client(
            ClientConfig(server=https_server, ca_pem=ca, proxy_url=wrong), retry=NO_RETRY
        ) as client:
            with pytest.raises(ServerUnreachable) as info:
                await client.list(CONFIGMAP, "default")
        # the message names the proxy with its user, never the password
        assert info.value.why == (
            f"proxy http://al@ice:xxxxx@127.0.0.1:{proxy.port} refused CONNECT "
            f"kube.test:{front.port}: 407 Proxy Authentication Required"
        )
        # right credentials (percent-encoded in the URL): tunnel and forwarding both work
        right = proxy.url(userinfo="al%40ice:p%3Aw%20d")
        async with Client(
            ClientConfig(server=https_server, ca_pem=ca, proxy_url=right), retry=NO_RETRY
        ) as client:
            await crud_and_watch(client)
        async with Client(
            ClientConfig(server=aserver.url, proxy_url=right), retry=NO_RETRY
        ) as client:
            await client.list(CONFIGMAP, "default")
        expected = "Basic " + base64.b64encode(b"al@ice:p:w d").decode()
        assert proxy.proxy_auth_seen[-1] == expected and proxy.forwarded == 1
        # an http server behind a proxy that wants credentials: the 407 is the answer
        async with Client(
            ClientConfig(server=aserver.url, proxy_url=proxy.url()), retry=NO_RETRY
        ) as client:
            with pytest.raises(ApiError) as api_info:
                await client.list(CONFIGMAP, "default")
        assert api_info.value.code == 407


async def test_https_proxy_with_tls_to_the_proxy(
    aserver: EmbeddedServer, pki: dict[str, Path]
) -> None:
    await scenario_https_proxy(aserver.port, pki)


async def scenario_https_proxy(backend_port: int, pki: dict[str, Path]) -> None:
    async with (
        TLSFront(server_context(pki, "server"), backend_port) as front,
        Proxy(ssl_context=server_context(pki, "proxy")) as proxy,
    ):
        ca = pki["ca.crt"].read_bytes()
        # TLS to the proxy (verified, as Go does, with the cluster's CA) and TLS to the
        # server inside it
        cfg = ClientConfig(
            server=f"https://kube.test:{front.port}", ca_pem=ca, proxy_url=proxy.url("https")
        )
        async with Client(cfg, retry=NO_RETRY) as client:
            for _ in range(3):
                assert (await client.list(CONFIGMAP, "default")).items == []
        assert proxy.tunnels == front.connections == 1
        # a proxy certificate the trust store does not vouch for
        async with Client(
            ClientConfig(server=f"http://kube.test:{backend_port}", proxy_url=proxy.url("https")),
            retry=NO_RETRY,
        ) as client:
            with pytest.raises(ServerUnreachable) as info:
                await client.list(CONFIGMAP, "default")
        assert info.value.why.startswith(
            f"proxy https://127.0.0.1:{proxy.port}: TLS certificate verification failed ("
        )


def test_tunnels_under_uvloop(pki: dict[str, Path]) -> None:
    async def main() -> None:
        async with EmbeddedServer("memory", allowed_hosts=["kube.test"]) as srv:
            await scenario_https_proxy(srv.port, pki)

    uvloop.run(main())


async def test_unreachable_and_silent_proxies() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead = sock.getsockname()[1]  # bound, never listening: refused
    async with Client(
        ClientConfig(server="https://kube.test", proxy_url=f"http://127.0.0.1:{dead}"),
        retry=NO_RETRY,
    ) as client:
        with pytest.raises(ServerUnreachable) as info:
            await client.list(CONFIGMAP, "default")
    assert str(info.value) == (
        "cannot reach the API server at https://kube.test: cannot "
        f"connect to proxy http://127.0.0.1:{dead}: connection refused"
    )

    heard: list[bytes] = []
    hung_up = asyncio.Event()

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            heard.append(
                await reader.read()
            )  # never answers CONNECT; returns when the client gives up
        finally:
            writer.close()
            hung_up.set()

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        cfg = ClientConfig(server="https://kube.test", proxy_url=f"http://127.0.0.1:{port}")
        async with Client(cfg, retry=NO_RETRY, timeout=0.3) as client:
            with pytest.raises(ServerUnreachable) as info:
                await client.list(CONFIGMAP, "default")
        assert info.value.why == f"timed out (through proxy http://127.0.0.1:{port})"
        await asyncio.wait_for(hung_up.wait(), 5)  # the half-open tunnel was closed
        assert heard == [b"CONNECT kube.test:443 HTTP/1.1\r\nHost: kube.test:443\r\n\r\n"]
    finally:
        server.close()
        await server.wait_closed()


async def test_socks5_environment_proxy_fails_the_request_clearly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "socks5://127.0.0.1:1080")
    async with Client(ClientConfig(server="https://kube.test"), retry=NO_RETRY) as client:
        with pytest.raises(ConfigError, match="socks5 proxies are not supported by kubewerk"):
            await client.list(CONFIGMAP, "default")
