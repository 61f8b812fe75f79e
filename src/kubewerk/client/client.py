"""The async API client: typed and dynamic CRUD, pagination, watch, patches, retries.

Guarantees:

- Every HTTP error answer raises a typed :class:`~kubewerk.core.errors.ApiError`
  subclass built from the server's ``Status`` body (see :mod:`kubewerk.client.errors`).
- A 429 or 5xx answer carrying ``Retry-After`` is retried after that delay (capped at
  ``RetryPolicy.max_retry_after``), whatever the verb, as client-go's ``rest.Request``
  does: the server says it did not process the request and when to come back (priority
  and fairness, a server shutting down). Without ``Retry-After`` a write is not retried
  (it may have happened): the error reaches the caller, a reconcile's work queue backs
  off; a read (GET, HEAD) is retried on 429, 500, 502, 503 and 504 with exponential
  backoff, which client-go does not do. At most ``RetryPolicy.max_retries`` retries
  (5; client-go's default is 10).
- A connection that could not be opened is retried for every verb (nothing was sent);
  a connection lost mid-request is retried for reads only. When retries run out the
  call raises :class:`~kubewerk.client.errors.ServerUnreachable` with one sentence.
- A 401 invalidates cached credentials (token file, exec plugin) and retries once.
- Requests travel over kubewerk's own HTTP/1.1 keep-alive pool
  (:mod:`kubewerk.client.transport`, asyncio + httptools): at most ``connection_limit``
  connections, reused while sound; a request whose reused connection the server had
  just closed is resent once on a fresh one when that cannot do harm (never a written
  POST or JSON patch: see :mod:`kubewerk.client.transport`).
- Proxies as client-go uses them (:mod:`kubewerk.client.proxy`): the kubeconfig
  cluster's ``proxy-url`` when set, else ``HTTPS_PROXY``/``HTTP_PROXY``/``NO_PROXY``
  (never for localhost or loopback servers). The choice is made when the pool is built
  (first request, a rotated client certificate, a changed server), not per request.
- Objects go out and come back as dicts, or as typed model instances when the kind is
  given as a model class.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import random
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any, Literal, Protocol, TypeVar, overload
from urllib.parse import quote, urlsplit

import orjson

from kubewerk.client.config import ClientConfig, Credentials, load_config, load_kubeconfig
from kubewerk.client.errors import (
    ConfigError,
    Gone,
    NotFound,
    ServerUnreachable,
    error_from_status,
)
from kubewerk.client.proxy import select_proxy
from kubewerk.client.resources import (
    BUILTINS,
    ResourceModel,
    ResourceType,
    is_model_class,
    resource_type_of,
    to_dict,
)
from kubewerk.client.transport import ConnectError, ConnectionPool, TransportError
from kubewerk.core.gvk import GroupVersion, split_api_version

log = logging.getLogger("kubewerk.client")

PatchType = Literal["merge", "json", "strategic", "apply"]
CONTENT_TYPES: dict[str, str] = {
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "apply": "application/apply-patch+yaml",
}
DEFAULT_FIELD_MANAGER = "kubewerk"

M = TypeVar("M", bound=ResourceModel)
Kind = ResourceType | type[ResourceModel]


@dataclass(slots=True)
class ObjectList:
    """One page (or all pages) of a list: items plus the list's resourceVersion and
    continue token."""

    items: list[Any]
    resource_version: str
    continue_token: str = ""
    remaining_item_count: int | None = None


@dataclass(slots=True)
class WatchEvent:
    """One watch event: ``type`` is ADDED, MODIFIED, DELETED or BOOKMARK."""

    type: str
    object: Any
    raw: dict[str, Any] = field(repr=False, default_factory=dict)

    @property
    def resource_version(self) -> str:
        """The event object's ``metadata.resourceVersion`` ('' when absent)."""
        return str(self.raw.get("metadata", {}).get("resourceVersion", ""))


@dataclass(slots=True)
class RetryPolicy:
    """How often and how long to retry: ``max_retries`` attempts after the first,
    backoff doubling from ``base`` to ``cap``."""

    max_retries: int = 5
    base: float = 0.1
    cap: float = 5.0
    max_retry_after: float = 30.0

    def delay(self, attempt: int) -> float:
        """Backoff before retry number ``attempt`` (0-based), with ±20 % jitter."""
        value: float = min(self.cap, self.base * (2**attempt))
        return value * random.uniform(0.8, 1.2)


_RETRY_CODES = frozenset({429, 500, 502, 503, 504})
_SAFE_METHODS = frozenset({"GET", "HEAD"})
# RFC 9110 9.2.2: sending one of these twice has the effect of sending it once
_IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})
_BODYLESS_METHODS = frozenset({"GET", "HEAD", "DELETE", "OPTIONS"})
# Characters a URL path may carry unescaped (RFC 3986 pchar plus "/"); a path made only
# of these is sent as it is, anything else is percent-encoded (a "%" in a name included).
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_PATH_SAFE = "!$&'()*+,;=:@/"
_PLAIN_PATH_CHARS = _UNRESERVED | frozenset(_PATH_SAFE)


@dataclass(frozen=True, slots=True)
class _Origin:
    """The parts of ``ClientConfig.server`` a request needs, parsed once."""

    server: str
    scheme: str  # "http" or "https"
    host: str  # where to connect (an IPv6 address without brackets)
    port: int
    authority: str  # the Host header
    base_path: str  # percent-encoded path prefix (a proxy's), no trailing "/"

    @classmethod
    def parse(cls, server: str) -> _Origin:
        try:
            parts = urlsplit(server)
            port = parts.port
        except ValueError as exc:
            raise ConfigError(f"the API server URL {server!r} is not valid: {exc}") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(f"the API server URL {server!r} is not an http:// or https:// URL")
        if port is None:
            port = 443 if parts.scheme == "https" else 80
        base = quote(parts.path.rstrip("/"), safe=_PATH_SAFE + "%")
        return cls(
            server, parts.scheme, parts.hostname, port, parts.netloc.rpartition("@")[2], base
        )


class RequestTrace(Protocol):
    """What a request hook returns for one API request (see :func:`set_request_hook`).

    ``headers`` are extra header lines sent with every attempt of the request, each
    ``"Name: value\r\n"`` (a ``traceparent``); :meth:`end` is called exactly once when
    the request is over, with the last HTTP status (0 when no answer came) and the
    exception the call raises (None on success)."""

    headers: str

    def end(self, status: int, error: BaseException | None) -> None: ...


RequestHook = Callable[[str, str], RequestTrace | None]
"""Called with the method and path of each API request (not watches) before it is
sent; returns a :class:`RequestTrace` to follow it, or None to leave it alone."""

_request_hook: RequestHook | None = None


def set_request_hook(hook: RequestHook | None) -> RequestHook | None:
    """Install ``hook`` for every :class:`Client` of this process (None removes it);
    returns the hook it replaces. With no hook a request pays one comparison, nothing
    else (:mod:`kubewerk.observe.tracing` installs one for OpenTelemetry)."""
    global _request_hook
    previous, _request_hook = _request_hook, hook
    return previous


def _check_header(what: str, value: str) -> str:
    if "\r" in value or "\n" in value:
        raise ValueError(f"{what} contains a line break; refusing to send it as an HTTP header")
    return value


def _quote(text: str) -> str:
    return text if _UNRESERVED.issuperset(text) else quote(text, safe="")


def _query(params: Mapping[str, str]) -> str:
    """``k=v&...`` with every character but the unreserved ones percent-encoded."""
    return "&".join([f"{_quote(k)}={_quote(v)}" for k, v in params.items()])


class _HeaderLookup(Protocol):
    def get(self, name: str, default: str | None = None, /) -> str | None: ...


def _retry_after(headers: _HeaderLookup) -> float | None:
    value = headers.get("Retry-After")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


class Client:
    """An async Kubernetes API client on one HTTP/1.1 connection pool.

    Use as ``async with Client(config) as client:`` (or call :meth:`close`). The pool
    is opened lazily on the first request, inside the running event loop; after
    :meth:`close` the next request opens a new one. A client certificate rotated by an
    exec plugin drops the pool (new connections present the new certificate).
    """

    def __init__(
        self,
        config: ClientConfig,
        *,
        retry: RetryPolicy | None = None,
        timeout: float = 30.0,
        connection_limit: int = 100,
        field_manager: str = DEFAULT_FIELD_MANAGER,
        user_agent: str = "kubewerk",
    ) -> None:
        self.config = config
        self.retry = retry or RetryPolicy()
        self.timeout = timeout
        self.connection_limit = connection_limit
        self.field_manager = field_manager
        self.user_agent = user_agent
        self._pool: ConnectionPool | None = None
        self._pool_cert: bytes | None = None
        self._pool_origin: _Origin | None = None
        self._origin: _Origin | None = None
        # (user agent, basic auth, origin) -> the header lines every request carries
        self._prefix: tuple[str, tuple[str, str] | None, _Origin | None, str] = ("", None, None, "")
        self._discovery: dict[tuple[str, str], ResourceType] = {}
        self._discovered_groups: set[str] = set()
        self._closed = False

    # -- construction -------------------------------------------------------------------

    @classmethod
    def from_kubeconfig(
        cls, path: str | None = None, context: str | None = None, **kwargs: Any
    ) -> Client:
        """A client for a kubeconfig context (default chain and current context when not given)."""
        return cls(load_kubeconfig(path, context), **kwargs)

    @classmethod
    def from_environment(
        cls, kubeconfig: str | None = None, context: str | None = None, **kwargs: Any
    ) -> Client:
        """Explicit kubeconfig, else in-cluster config in a pod, else the default kubeconfig."""
        return cls(load_config(kubeconfig, context), **kwargs)

    @classmethod
    def from_url(cls, url: str, namespace: str = "default", **kwargs: Any) -> Client:
        """A client for an unauthenticated http(s) URL (the embedded server)."""
        return cls(ClientConfig(server=url.rstrip("/"), namespace=namespace, source=url), **kwargs)

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Close every pooled connection, idle or in use (idempotent)."""
        self._closed = True
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()

    @property
    def server(self) -> str:
        """The API server's base URL."""
        return self.config.server

    @property
    def namespace(self) -> str:
        """The default namespace (from the kubeconfig context or service account)."""
        return self.config.namespace

    def _get_origin(self) -> _Origin:
        origin = self._origin
        if origin is None or origin.server != self.config.server:
            origin = self._origin = _Origin.parse(self.config.server)
        return origin

    async def _get_pool(self, creds: Credentials, origin: _Origin) -> ConnectionPool:
        pool = self._pool
        cert = creds.client_cert_pem
        if pool is not None and cert == self._pool_cert and origin is self._pool_origin:
            return pool
        old = pool
        # the proxy is chosen here, once per pool (kubeconfig proxy-url, else the
        # environment as Go's ProxyFromEnvironment reads it), never per request
        proxy = select_proxy(self.config.proxy_url, origin.scheme, origin.host, origin.port)
        ssl_context = self.config.ssl_context(creds)
        # the new pool is in place before anything is awaited, so concurrent requests
        # that also saw the change use it instead of building one each
        self._pool = pool = ConnectionPool(
            origin.host,
            origin.port,
            ssl_context=ssl_context,
            server_hostname=self.config.tls_server_name,
            limit=self.connection_limit,
            connect_timeout=self.timeout,
            proxy=proxy,
            # Go dials an https proxy with the transport's own TLS config (the cluster's CA)
            proxy_ssl_context=ssl_context,
            authority=origin.authority,
        )
        self._pool_cert = cert
        self._pool_origin = origin
        self._closed = False
        if old is not None:
            # an exec plugin rotated its client certificate (or the server changed):
            # requests in flight finish on their connections, which are closed after
            await old.close(abort_active=False)
        return pool

    # -- the request core ---------------------------------------------------------------

    @staticmethod
    def _target(origin: _Origin, path: str, params: Mapping[str, str] | None) -> str:
        """The request target (path and query). A path of plain characters (every API
        path built from valid names) is sent as it is; anything else is percent-encoded
        (a query written into ``path`` after "?" is kept, ``params`` appended to it).
        Dot segments are not collapsed (as client-go, the server sees the path sent)."""
        if not _PLAIN_PATH_CHARS.issuperset(path):
            path, sep, query = path.partition("?")
            path = quote(path, safe=_PATH_SAFE)
            if sep:  # a query written into the path is kept (its escapes as written)
                path += "?" + quote(query, safe=_PATH_SAFE + "?%")
                if params:
                    return f"{origin.base_path}{path}&{_query(params)}"
        if params:
            return f"{origin.base_path}{path}?{_query(params)}"
        return origin.base_path + path

    def _wire(
        self,
        method: str,
        target: str,
        origin: _Origin,
        creds: Credentials,
        data: bytes | None,
        content_type: str,
        extra: str = "",
    ) -> bytes:
        """The serialised request: request line, headers (``extra``: more header lines,
        each ending in CRLF), body."""
        ua, basic, for_origin, prefix = self._prefix
        if ua != self.user_agent or basic != self.config.basic or for_origin is not origin:
            lines = [
                f"Host: {origin.authority}\r\n",
                f"User-Agent: {_check_header('the user agent', self.user_agent)}\r\n",
                "Accept: application/json\r\n",
            ]
            if self.config.basic:
                user, password = self.config.basic
                encoded = base64.b64encode(f"{user}:{password}".encode()).decode()
                lines.append(f"Authorization: Basic {encoded}\r\n")
            prefix = "".join(lines)
            self._prefix = (self.user_agent, self.config.basic, origin, prefix)
        head = f"{method} {target} HTTP/1.1\r\n{prefix}{extra}"
        if creds.token:
            head += f"Authorization: Bearer {_check_header('the bearer token', creds.token)}\r\n"
        if data is not None:
            head += (
                f"Content-Type: {_check_header('the content type', content_type)}\r\n"
                f"Content-Length: {len(data)}\r\n\r\n"
            )
            return head.encode() + data
        if method not in _BODYLESS_METHODS:
            head += "Content-Length: 0\r\n"
        return (head + "\r\n").encode()

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        retry: RetryPolicy | None = None,
    ) -> Any:
        """Send one API request and return the decoded JSON answer (retries as documented
        above). An installed request hook (:func:`set_request_hook`) sees it."""
        hook = _request_hook
        trace = hook(method, path) if hook is not None else None
        status = 0
        try:
            policy = retry or self.retry
            data = (
                None if body is None else (body if isinstance(body, bytes) else orjson.dumps(body))
            )
            origin = self._get_origin()
            target = self._target(origin, path, params)
            safe = method in _SAFE_METHODS
            # a merge, strategic-merge or apply patch applied twice gives what applying it
            # once gives; a JSON patch (an "add" to a list) or a POST need not
            idempotent = method in _IDEMPOTENT_METHODS or (
                method == "PATCH" and content_type != CONTENT_TYPES["json"]
            )
            attempt = 0
            reauthed = False
            while True:
                creds = await self.config.auth.credentials()
                pool = self._pool
                if (
                    pool is None
                    or creds.client_cert_pem != self._pool_cert
                    or origin is not self._pool_origin
                ):
                    pool = await self._get_pool(creds, origin)
                wire = self._wire(
                    method,
                    target,
                    origin,
                    creds,
                    data,
                    content_type,
                    trace.headers if trace is not None else "",
                )
                try:
                    resp = await pool.request(
                        wire,
                        safe=safe,
                        idempotent=idempotent,
                        head=method == "HEAD",
                        timeout=self.timeout,
                    )
                except ConnectError as exc:
                    # nothing was sent: safe to retry for every verb (unless it cannot help:
                    # a proxy that refused the tunnel with a 4xx)
                    if attempt >= policy.max_retries or not exc.retry:
                        raise ServerUnreachable(self.config.server, _why(exc, pool)) from None
                    await asyncio.sleep(policy.delay(attempt))
                    attempt += 1
                    continue
                except (TimeoutError, TransportError) as exc:
                    if not safe or attempt >= policy.max_retries:
                        raise ServerUnreachable(self.config.server, _why(exc, pool)) from None
                    await asyncio.sleep(policy.delay(attempt))
                    attempt += 1
                    continue
                status = resp.status
                raw = resp.body
                resp_headers = resp.headers
                if status < 400:
                    result = orjson.loads(raw) if raw else None
                    if trace is not None:
                        done, trace = trace, None  # ended once, even if end() raised
                        done.end(status, None)
                    return result
                try:
                    decoded = orjson.loads(raw) if raw else None
                except orjson.JSONDecodeError:
                    decoded = None
                if status == 401 and not reauthed and self.config.auth.invalidate():
                    reauthed = True
                    continue
                if status in _RETRY_CODES and attempt < policy.max_retries:
                    wait = _retry_after(resp_headers)
                    retryable = safe or wait is not None
                    if retryable:
                        delay = (
                            min(wait, policy.max_retry_after)
                            if wait is not None
                            else policy.delay(attempt)
                        )
                        log.debug("%s %s: HTTP %d, retrying in %.2fs", method, path, status, delay)
                        await asyncio.sleep(delay)
                        attempt += 1
                        continue
                text = raw.decode(errors="replace").strip()[:200] if decoded is None else ""
                raise error_from_status(status, decoded, text)
        except BaseException as exc:
            if trace is not None:
                trace.end(status, exc)
            raise

    # -- kinds --------------------------------------------------------------------------

    async def resolve(self, api_version: str, kind: str) -> ResourceType:
        """The ResourceType serving ``apiVersion``/``kind`` (built-in table, then discovery)."""
        key = (api_version, kind)
        found = BUILTINS.get(key) or self._discovery.get(key)
        if found is not None:
            return found
        # an apiVersion that does not parse names no served group version
        gv = split_api_version(api_version)
        if api_version not in self._discovered_groups and gv.version:
            await self._discover(api_version, gv)
            found = self._discovery.get(key)
            if found is not None:
                return found
        raise NotFound(
            404,
            "NotFound",
            f'no matches for kind "{kind}" in version "{api_version}"',
            {"kind": kind, "group": gv.group},
        )

    async def _discover(self, api_version: str, gv: GroupVersion) -> None:
        group, version = gv
        path = f"/apis/{group}/{version}" if group else f"/api/{version}"
        try:
            doc = await self.request("GET", path)
        except NotFound:
            doc = {"resources": []}
        for res in doc.get("resources", []):
            name = str(res.get("name", ""))
            if "/" in name:
                continue
            rt = ResourceType(
                group, version, str(res.get("kind")), name, bool(res.get("namespaced"))
            )
            self._discovery[(api_version, rt.kind)] = rt
        self._discovered_groups.add(api_version)

    def forget_discovery(self) -> None:
        """Drop discovered kinds (after installing CRDs, say)."""
        self._discovery.clear()
        self._discovered_groups.clear()

    async def _rt_for_object(self, obj: dict[str, Any]) -> ResourceType:
        api_version = obj.get("apiVersion")
        kind = obj.get("kind")
        if not api_version or not kind:
            raise ValueError("the object needs apiVersion and kind")
        return await self.resolve(str(api_version), str(kind))

    def _namespace_for(
        self, rt: ResourceType, namespace: str | None, obj: Mapping[str, Any] | None = None
    ) -> str | None:
        if not rt.namespaced:
            return None
        if namespace:
            return namespace
        if obj is not None:
            ns = obj.get("metadata", {}).get("namespace")
            if ns:
                return str(ns)
        return self.config.namespace

    @staticmethod
    def _decode(kind: Any, data: Any) -> Any:
        if is_model_class(kind):
            return kind.model_validate(data)
        return data

    # -- CRUD ---------------------------------------------------------------------------

    @overload
    async def get(self, kind: type[M], name: str, namespace: str | None = None) -> M: ...
    @overload
    async def get(
        self, kind: ResourceType, name: str, namespace: str | None = None
    ) -> dict[str, Any]: ...
    async def get(self, kind: Kind, name: str, namespace: str | None = None) -> Any:
        """Read one object; raises NotFound when it does not exist."""
        rt = resource_type_of(kind)
        data = await self.request("GET", rt.path(self._namespace_for(rt, namespace), name))
        return self._decode(kind, data)

    async def list(
        self,
        kind: Kind,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
        continue_token: str | None = None,
        resource_version: str | None = None,
    ) -> ObjectList:
        """One list call (one page when ``limit`` is set). ``namespace=None`` lists all
        namespaces."""
        rt = resource_type_of(kind)
        params: dict[str, str] = {}
        if label_selector:
            params["labelSelector"] = label_selector
        if field_selector:
            params["fieldSelector"] = field_selector
        if limit:
            params["limit"] = str(limit)
        if continue_token:
            params["continue"] = continue_token
        if resource_version is not None:
            params["resourceVersion"] = resource_version
        data = await self.request(
            "GET", rt.path(namespace if rt.namespaced else None), params=params
        )
        meta = data.get("metadata") or {}
        items = data.get("items") or []
        if is_model_class(kind):
            items = [self._decode(kind, i) for i in items]
        else:
            # list items carry no apiVersion/kind; restore them so objects are self-describing
            for item in items:
                item.setdefault("apiVersion", rt.api_version)
                item.setdefault("kind", rt.kind)
        return ObjectList(
            items=items,
            resource_version=str(meta.get("resourceVersion", "")),
            continue_token=str(meta.get("continue", "") or ""),
            remaining_item_count=meta.get("remainingItemCount"),
        )

    async def list_all(
        self,
        kind: Kind,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        page_size: int = 500,
    ) -> ObjectList:
        """Every item, following ``continue`` tokens; a 410 mid-way restarts the list
        from scratch."""
        for _ in range(5):
            items: list[Any] = []
            token: str | None = None
            try:
                while True:
                    page = await self.list(
                        kind,
                        namespace,
                        label_selector=label_selector,
                        field_selector=field_selector,
                        limit=page_size,
                        continue_token=token,
                    )
                    items.extend(page.items)
                    if not page.continue_token:
                        return ObjectList(items, page.resource_version)
                    token = page.continue_token
            except Gone:
                if token is None:
                    raise
                continue
        raise Gone(410, "Expired", "list continuation kept expiring; gave up after 5 attempts")

    async def iter(
        self,
        kind: Kind,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        page_size: int = 500,
    ) -> AsyncIterator[Any]:
        """Iterate over every item, one page in memory at a time."""
        token: str | None = None
        while True:
            page = await self.list(
                kind,
                namespace,
                label_selector=label_selector,
                field_selector=field_selector,
                limit=page_size,
                continue_token=token,
            )
            for item in page.items:
                yield item
            if not page.continue_token:
                return
            token = page.continue_token

    def _write_params(self, dry_run: bool, field_manager: str | None) -> dict[str, str]:
        params: dict[str, str] = {"fieldManager": field_manager or self.field_manager}
        if dry_run:
            params["dryRun"] = "All"
        return params

    @overload
    async def create(
        self,
        obj: M,
        namespace: str | None = None,
        *,
        dry_run: bool = False,
        field_manager: str | None = None,
    ) -> M: ...
    @overload
    async def create(
        self,
        obj: dict[str, Any],
        namespace: str | None = None,
        *,
        dry_run: bool = False,
        field_manager: str | None = None,
    ) -> dict[str, Any]: ...
    async def create(
        self,
        obj: Any,
        namespace: str | None = None,
        *,
        dry_run: bool = False,
        field_manager: str | None = None,
    ) -> Any:
        """Create an object (dict or model instance); returns the server's copy in the same form."""
        kind, rt, body = await self._prepare(obj)
        data = await self.request(
            "POST",
            rt.path(self._namespace_for(rt, namespace, body)),
            params=self._write_params(dry_run, field_manager),
            body=body,
        )
        return self._decode(kind, data)

    async def _prepare(self, obj: Any) -> tuple[Any, ResourceType, dict[str, Any]]:
        if isinstance(obj, dict):
            return None, await self._rt_for_object(obj), obj
        kind = type(obj)
        rt = resource_type_of(kind)
        body = to_dict(obj)
        body.setdefault("apiVersion", rt.api_version)
        body.setdefault("kind", rt.kind)
        return kind, rt, body

    @overload
    async def replace(
        self,
        obj: M,
        *,
        subresource: str | None = None,
        dry_run: bool = False,
        field_manager: str | None = None,
    ) -> M: ...
    @overload
    async def replace(
        self,
        obj: dict[str, Any],
        *,
        subresource: str | None = None,
        dry_run: bool = False,
        field_manager: str | None = None,
    ) -> dict[str, Any]: ...
    async def replace(
        self,
        obj: Any,
        *,
        subresource: str | None = None,
        dry_run: bool = False,
        field_manager: str | None = None,
    ) -> Any:
        """PUT the object (guarded by its ``metadata.resourceVersion`` when set: a stale
        one raises Conflict)."""
        kind, rt, body = await self._prepare(obj)
        name = str(body.get("metadata", {}).get("name", ""))
        if not name:
            raise ValueError("replace needs metadata.name")
        data = await self.request(
            "PUT",
            rt.path(self._namespace_for(rt, None, body), name, subresource),
            params=self._write_params(dry_run, field_manager),
            body=body,
        )
        return self._decode(kind, data)

    async def replace_status(self, obj: Any, *, field_manager: str | None = None) -> Any:
        """PUT ``/status`` (only status changes; a stale resourceVersion raises Conflict)."""
        return await self.replace(obj, subresource="status", field_manager=field_manager)

    @overload
    async def patch(
        self,
        kind: type[M],
        name: str,
        patch: Any,
        namespace: str | None = None,
        *,
        type: PatchType = "merge",
        subresource: str | None = None,
        field_manager: str | None = None,
        force: bool = False,
        dry_run: bool = False,
    ) -> M: ...
    @overload
    async def patch(
        self,
        kind: ResourceType,
        name: str,
        patch: Any,
        namespace: str | None = None,
        *,
        type: PatchType = "merge",
        subresource: str | None = None,
        field_manager: str | None = None,
        force: bool = False,
        dry_run: bool = False,
    ) -> dict[str, Any]: ...
    async def patch(
        self,
        kind: Kind,
        name: str,
        patch: Any,
        namespace: str | None = None,
        *,
        type: PatchType = "merge",
        subresource: str | None = None,
        field_manager: str | None = None,
        force: bool = False,
        dry_run: bool = False,
    ) -> Any:
        """Patch an object: ``merge`` (RFC 7386), ``json`` (RFC 6902 list of ops),
        ``strategic`` (built-in kinds), or ``apply`` (server-side apply; ``force`` takes
        over conflicting fields). A merge patch that sets ``metadata.resourceVersion``
        is a guarded write: a stale version raises Conflict."""
        rt = resource_type_of(kind)
        params = self._write_params(dry_run, field_manager)
        if type == "apply" and force:
            params["force"] = "true"
        body = to_dict(patch) if not isinstance(patch, list | bytes) else patch
        data = await self.request(
            "PATCH",
            rt.path(self._namespace_for(rt, namespace), name, subresource),
            params=params,
            body=body,
            content_type=CONTENT_TYPES[type],
        )
        return self._decode(kind, data)

    async def patch_status(
        self,
        kind: Kind,
        name: str,
        patch: Any,
        namespace: str | None = None,
        *,
        type: PatchType = "merge",
        field_manager: str | None = None,
    ) -> Any:
        """Patch the ``/status`` subresource."""
        return await self.patch(
            kind,
            name,
            patch,
            namespace,
            type=type,
            subresource="status",
            field_manager=field_manager,
        )

    @overload
    async def apply(
        self,
        obj: M,
        *,
        field_manager: str,
        force: bool = False,
        subresource: str | None = None,
        namespace: str | None = None,
        dry_run: bool = False,
    ) -> M: ...
    @overload
    async def apply(
        self,
        obj: dict[str, Any],
        *,
        field_manager: str,
        force: bool = False,
        subresource: str | None = None,
        namespace: str | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]: ...
    async def apply(
        self,
        obj: Any,
        *,
        field_manager: str,
        force: bool = False,
        subresource: str | None = None,
        namespace: str | None = None,
        dry_run: bool = False,
    ) -> Any:
        """Server-side apply of ``obj``, the full intent of ``field_manager`` (a dict, or a
        typed model instance: only the fields that were set are sent).

        Guarantees, as on any Kubernetes API server: the object is created when it does
        not exist (not through ``/status``); ``field_manager`` then owns exactly the
        fields sent, and fields it applied before and leaves out now are removed unless
        another manager owns them; re-applying the same intent changes nothing (the same
        ``resourceVersion`` comes back). A field another manager owns with a different
        value raises :class:`~kubewerk.client.errors.Conflict` (409, the server's
        "Apply failed with N conflict(s): ..." message and one cause per field) unless
        ``force``, which takes those fields over. ``subresource="status"`` applies to
        ``/status`` (only status is taken). A ``metadata.resourceVersion`` in ``obj`` is
        a precondition (stale: Conflict); ``metadata.managedFields`` must be absent
        (the server answers 400). Returns the server's copy in the form given.

        ``field_manager`` is required (Kubernetes refuses an apply without one); an
        empty one, or an ``obj`` without ``metadata.name``, raises ``ValueError`` before
        anything is sent.
        """
        if not field_manager:
            raise ValueError("apply needs a field_manager (Kubernetes requires one for apply)")
        kind, rt, body = await self._prepare(obj)
        meta = body.get("metadata")
        name = str(meta.get("name") or "") if isinstance(meta, dict) else ""
        if not name:
            raise ValueError("apply needs metadata.name")
        params: dict[str, str] = {"fieldManager": field_manager}
        if force:
            params["force"] = "true"
        if dry_run:
            params["dryRun"] = "All"
        data = await self.request(
            "PATCH",
            rt.path(self._namespace_for(rt, namespace, body), name, subresource),
            params=params,
            body=body,
            content_type=CONTENT_TYPES["apply"],
        )
        return self._decode(kind, data)

    async def delete(
        self,
        kind: Kind,
        name: str,
        namespace: str | None = None,
        *,
        propagation_policy: Literal["Background", "Foreground", "Orphan"] | None = None,
        grace_period_seconds: int | None = None,
        preconditions: Mapping[str, str] | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any] | None:
        """Delete an object. Returns the server's answer: the object (still present while
        finalizers run) or a Status. Raises NotFound when it is already gone."""
        rt = resource_type_of(kind)
        body: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if propagation_policy:
            body["propagationPolicy"] = propagation_policy
        if grace_period_seconds is not None:
            body["gracePeriodSeconds"] = grace_period_seconds
        if preconditions:
            body["preconditions"] = dict(preconditions)
        if dry_run:
            body["dryRun"] = ["All"]
        data = await self.request(
            "DELETE", rt.path(self._namespace_for(rt, namespace), name), body=body
        )
        return data if isinstance(data, dict) else None

    # -- watch --------------------------------------------------------------------------

    async def watch(
        self,
        kind: Kind,
        namespace: str | None = None,
        *,
        resource_version: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        allow_bookmarks: bool = True,
        send_initial_events: bool = False,
        timeout_seconds: int | None = None,
        idle_timeout: float | None = None,
    ) -> AsyncIterator[WatchEvent]:
        """One watch stream. Yields events until the server ends it; an ERROR event is
        raised as its typed error (410 → :class:`Gone`, meaning: relist). For
        resume-and-relist semantics use :func:`kubewerk.client.watch.list_watch`.

        Bounds: the stream ends by ``timeout_seconds`` + 60 s whatever happens (the
        server is asked to end it at ``timeout_seconds``); with ``idle_timeout`` the
        answer's headers, and then each piece of the body, must arrive within that many
        seconds, else the connection is closed and :class:`ServerUnreachable` raised (a
        half-open connection or a server that stopped sending: with bookmarks asked for,
        a healthy server is never silent for long). A 429 or 5xx answer carrying
        ``Retry-After`` is retried after that delay (at most ``retry.max_retries``
        times), as client-go's ``Request.Watch`` does."""
        rt = resource_type_of(kind)
        params: dict[str, str] = {"watch": "1"}
        if resource_version is not None:
            params["resourceVersion"] = resource_version
        if label_selector:
            params["labelSelector"] = label_selector
        if field_selector:
            params["fieldSelector"] = field_selector
        if allow_bookmarks:
            params["allowWatchBookmarks"] = "true"
        if send_initial_events:
            params["sendInitialEvents"] = "true"
            params["resourceVersionMatch"] = "NotOlderThan"
        if timeout_seconds is not None:
            params["timeoutSeconds"] = str(timeout_seconds)
        origin = self._get_origin()
        target = self._target(origin, rt.path(namespace if rt.namespaced else None), params)
        creds = await self.config.auth.credentials()
        pool = await self._get_pool(creds, origin)
        # the whole stream ends by timeoutSeconds + 60 s; connecting takes at most self.timeout
        deadline = (
            None
            if timeout_seconds is None
            else asyncio.get_running_loop().time() + timeout_seconds + 60
        )

        def timed_out(exc: TimeoutError) -> ServerUnreachable:
            # the idle bound fired, unless the stream's overall deadline has passed
            loop_time = asyncio.get_running_loop().time()
            if idle_timeout is not None and (deadline is None or loop_time < deadline):
                why = f"the watch connection was silent for {idle_timeout:g}s"
            else:
                why = _why(exc, pool)
            return ServerUnreachable(self.config.server, why)

        attempt = 0
        while True:
            wire = self._wire("GET", target, origin, creds, None, "")
            try:
                async with asyncio.timeout(idle_timeout):
                    resp = await pool.stream(wire, connect_timeout=self.timeout, deadline=deadline)
            except TimeoutError as exc:
                raise timed_out(exc) from None
            except TransportError as exc:
                raise ServerUnreachable(self.config.server, _why(exc, pool)) from None
            if resp.status < 400:
                break
            try:
                try:
                    async with asyncio.timeout(idle_timeout):
                        raw = await resp.read()
                except TimeoutError as exc:
                    raise timed_out(exc) from None
                except TransportError as exc:
                    raise ServerUnreachable(self.config.server, _why(exc, pool)) from None
            finally:
                resp.close()
            wait = _retry_after(resp.headers) if resp.status in _RETRY_CODES else None
            if wait is not None and attempt < self.retry.max_retries:
                attempt += 1
                await asyncio.sleep(min(wait, self.retry.max_retry_after))
                continue
            try:
                decoded = orjson.loads(raw) if raw else None
            except orjson.JSONDecodeError:
                decoded = None
            if resp.status == 401:
                self.config.auth.invalidate()
            raise error_from_status(resp.status, decoded, raw.decode(errors="replace")[:200])
        model = is_model_class(kind)
        try:
            buffer = b""
            while True:
                try:
                    async with asyncio.timeout(idle_timeout):
                        chunk = await resp.read_chunk()
                except TimeoutError as exc:
                    raise timed_out(exc) from None
                except TransportError as exc:
                    raise ServerUnreachable(self.config.server, _why(exc, pool)) from None
                if not chunk:
                    break
                if b"\n" not in chunk:
                    buffer += chunk
                    continue
                # one split per chunk (not one slice of the rest per event)
                lines = (buffer + chunk).split(b"\n")
                buffer = lines.pop()
                for line in lines:
                    if not line.strip():
                        continue
                    yield self._watch_event(line, rt, kind if model else None)
            if buffer.strip():
                yield self._watch_event(buffer, rt, kind if model else None)
        finally:
            # a stream not read to its end closes its connection (never pooled half-read)
            resp.close()

    @staticmethod
    def _watch_event(line: bytes, rt: ResourceType, model: Any) -> WatchEvent:
        doc = orjson.loads(line)
        etype = str(doc.get("type", ""))
        obj = doc.get("object") or {}
        if etype == "ERROR":
            raise error_from_status(int(obj.get("code") or 500), obj, "watch error")
        if etype != "BOOKMARK" and model is not None:
            return WatchEvent(etype, model.model_validate(obj), obj)
        return WatchEvent(etype, obj, obj)


def _why(exc: BaseException, pool: ConnectionPool) -> str:
    """The short reason ServerUnreachable carries ("connection refused", "timed out", ...);
    a timeout names the proxy when the pool goes through one."""
    if isinstance(exc, TransportError):
        return exc.why
    if isinstance(exc, TimeoutError):
        return (
            "timed out" if pool.proxy is None else f"timed out (through proxy {pool.proxy.display})"
        )
    return str(exc) or type(exc).__name__
