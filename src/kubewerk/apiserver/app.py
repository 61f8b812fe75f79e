"""The embedded API server as a raw ASGI application.

``ApiServer`` is the whole control plane in one object: storage, the resource registry,
the REST verbs, watch fan-out, discovery, OpenAPI and the built-in controllers. Its
``__call__`` is an ASGI app (serve it with uvicorn, or call it in-process in tests). The
router is our own, over raw ASGI, to keep the hot path short.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterable
from contextvars import Token
from typing import Any

import orjson

from kubewerk import __version__
from kubewerk.apiserver import decode, discovery, openapi, openapi_v2, protobuf, table
from kubewerk.apiserver.admission import Admission
from kubewerk.apiserver.auth.authn import AuthenticationConfig, Authenticator
from kubewerk.apiserver.auth.guard import RequestGuard
from kubewerk.apiserver.auth.tokens import DEFAULT_ISSUER, ServiceAccountTokens, SigningKey
from kubewerk.apiserver.auth.types import (
    CURRENT_USER,
    UNSECURED,
    Attributes,
    Authorizer,
    UserInfo,
)
from kubewerk.apiserver.builtins import INITIAL_NAMESPACES, install_builtins
from kubewerk.apiserver.controllers import Controllers
from kubewerk.apiserver.fieldmanager import USER_AGENT
from kubewerk.apiserver.hosts import HostPolicy
from kubewerk.apiserver.kinds.kubernetes_service import KEYS as KUBERNETES_SERVICE_KEYS
from kubewerk.apiserver.kinds.kubernetes_service import (
    RECONCILE_INTERVAL as KUBERNETES_SERVICE_INTERVAL,
)
from kubewerk.apiserver.kinds.kubernetes_service import KubernetesService
from kubewerk.apiserver.kinds.namespaces import refuse_immortal_delete
from kubewerk.apiserver.kinds.services import (
    DEFAULT_SERVICE_CLUSTER_IP_RANGE,
    DEFAULT_SERVICE_NODE_PORT_RANGE,
    ServiceAllocator,
    ServiceNetwork,
    ServiceStrategy,
)
from kubewerk.apiserver.metrics import CONTENT_TYPE, ApiMetrics, RequestLabels, non_resource_labels
from kubewerk.apiserver.querystring import parse_query, query_flag
from kubewerk.apiserver.readcache import ReadCache
from kubewerk.apiserver.registry import Registry, ServedResource
from kubewerk.apiserver.request import RestResponse, Target
from kubewerk.apiserver.responses import AsgiScope, Receive, Send, json_headers, wants_table
from kubewerk.apiserver.rest import APPLY_YAML, ResourceApi
from kubewerk.apiserver.storage.base import Event, StorageError, Store, UnstorableObject
from kubewerk.apiserver.storage.boundary import stored_encoding
from kubewerk.apiserver.watch import DEFAULT_MAX_BACKLOG_BYTES, WatchHub, WatchStream
from kubewerk.core.errors import ApiError
from kubewerk.core.gofmt import unmarshal_kind

JSON = dict[str, Any]

MAX_BODY = decode.MAX_BODY_BYTES
log = logging.getLogger("kubewerk.apiserver")

_JSON_HEADERS = [(b"content-type", b"application/json")]
_NON_RESOURCE_LABELS = {
    m: non_resource_labels(m) for m in ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")
}


class ClientGone(Exception):
    """The connection ended before the request body was complete."""


CreateHandler = Callable[[Target, JSON, UserInfo, dict[str, str]], RestResponse]
"""Answers a create (POST) of a resource or subresource that is not stored: a review, a
``TokenRequest``. Gets the target, the decoded body, the request's user and its query."""


class Request:
    """The parts of an HTTP request the API looks at; ``user`` is who it is (after
    authentication and impersonation); ``warnings`` are the Warning headers gathered for
    the response so far (sent with it, an error response included)."""

    __slots__ = ("body", "headers", "labels", "method", "path", "query", "user", "warnings")

    def __init__(
        self, method: str, path: str, query: dict[str, str], headers: dict[str, str], body: bytes
    ) -> None:
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
        # the metric labels; routing to a resource replaces them with its own
        self.labels = _NON_RESOURCE_LABELS.get(method) or non_resource_labels(method)
        self.user: UserInfo = UNSECURED
        self.warnings: list[str] = []

    @property
    def accept(self) -> str:
        return self.headers.get("accept", "")

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "")


class ApiServer:
    """The embedded control plane as an ASGI application.

    ``authentication`` (None: off, every request ``system:unsecured`` in
    ``system:masters``) and ``authorizer`` (None: everything allowed) secure every
    request, in kube-apiserver's order (see ``auth.guard``). The request's user is
    ``Request.user`` and, for code that sees only a target and a body,
    ``auth.types.request_user()``. ServiceAccount tokens (``serviceaccounts/token``)
    are signed by ``service_account_key`` (a key, or a callable making one on first use;
    default: a new key in memory) with ``service_account_issuer``, and accepted for
    ``api_audiences`` (default: the issuer).
    """

    def __init__(
        self,
        store: Store,
        *,
        admission: Admission | None = None,
        bookmark_interval: float = 60.0,
        compaction_interval: float = 60.0,
        log_requests: bool = False,
        allowed_hosts: Iterable[str] | None = (),
        watch_backlog_bytes: int = DEFAULT_MAX_BACKLOG_BYTES,
        service_cluster_ip_range: str = DEFAULT_SERVICE_CLUSTER_IP_RANGE,
        service_node_port_range: str = DEFAULT_SERVICE_NODE_PORT_RANGE,
        advertise_address: str | None = None,
        advertise_port: int | None = None,
        authentication: AuthenticationConfig | None = None,
        authorizer: Authorizer | None = None,
        service_account_key: SigningKey | Callable[[], SigningKey] | None = None,
        service_account_issuer: str = DEFAULT_ISSUER,
        api_audiences: Iterable[str] = (),
    ) -> None:
        # the ranges are parsed first: a malformed one refuses the arguments (ValueError)
        self.service_network = ServiceNetwork.parse(
            service_cluster_ip_range, service_node_port_range
        )
        self.store = store
        self.service_accounts = ServiceAccountTokens(
            service_account_key if service_account_key is not None else SigningKey.generate,
            self._lookup,
            issuer=service_account_issuer,
            audiences=tuple(api_audiences),
        )
        authenticator = (
            None
            if authentication is None
            else Authenticator(
                tokens=authentication.tokens,
                service_accounts=(
                    self.service_accounts if authentication.service_account_tokens else None
                ),
                client_certificates=authentication.client_certificates,
                anonymous=authentication.anonymous,
            )
        )
        self.guard = RequestGuard(authenticator, authorizer)
        self.creates: dict[tuple[str, str, str], CreateHandler] = {}
        self._create_resources: set[str] = set()  # the resources named in ``creates``
        self._create_decoders: dict[tuple[str, str, str], Callable[[bytes], JSON]] = {}
        # None: every Host is answered (for callers with authentication in front)
        self.hosts = HostPolicy(allowed_hosts) if allowed_hosts is not None else None
        self.registry = Registry()
        install_builtins(self.registry)
        if admission is None:
            from kubewerk.apiserver.schema_admission import SchemaAdmission

            admission = SchemaAdmission()
        self.admission = admission
        self.api = ResourceApi(store, self.registry, self.admission)
        self.api.authorize_create_on_update = self._authorize_create_on_update
        from kubewerk.apiserver.admission_chain.chain import AdmissionChain

        # webhooks and policies; a write takes the async path only when one is stored
        self.chain = AdmissionChain(store, self.registry, self.api)
        from kubewerk.apiserver.conversion_webhook import ConversionWebhooks

        # CRDs with conversion strategy Webhook, in a version other than the storage one
        self.conversion = ConversionWebhooks(self)
        self.reads = ReadCache(store, self.registry)
        self.hub = WatchHub(store, max_backlog_bytes=watch_backlog_bytes)
        self.metrics = ApiMetrics(store, self.registry, self.hub)
        # the chain's webhook and policy counts are the ones /metrics renders
        self.chain.metrics = self.metrics.admission
        self.controllers = Controllers(store, self.registry, self.api, self.hub)
        self.service_allocator = ServiceAllocator(store, self.service_network)
        services = self.registry.get("", "services")
        if services is not None and isinstance(services.strategy, ServiceStrategy):
            services.strategy.attach(self.service_allocator)
        self.kubernetes_service: KubernetesService | None = None
        self.bookmark_interval = bookmark_interval
        self.compaction_interval = compaction_interval
        self.log_requests = log_requests
        self.started = False
        self._tasks: list[asyncio.Task[None]] = []
        self._bootstrap()
        from kubewerk.apiserver.auth.selfsubject import install_self_subject_review
        from kubewerk.apiserver.auth.tokenreview import install_token_review
        from kubewerk.apiserver.kinds.eviction import install_eviction
        from kubewerk.apiserver.kinds.serviceaccounts import install_token_request

        install_self_subject_review(self)
        install_token_review(self)
        install_token_request(self)
        install_eviction(self)
        if advertise_address is not None and advertise_port is not None:
            self.advertise(advertise_address, advertise_port)

    def _lookup(self, resource: str, namespace: str, name: str) -> JSON | None:
        """A stored core/v1 object (for token validation), or None."""
        rtype = self.registry.get("", resource)
        return None if rtype is None else self.store.get(rtype.key(namespace, name))

    def serve_create(
        self,
        rtype: ServedResource,
        handler: CreateHandler,
        subresource: str = "",
        protobuf_decoder: Callable[[bytes], JSON] | None = None,
    ) -> None:
        """Answer POSTs to ``rtype`` (or to its ``subresource`` of a named object) with
        ``handler`` instead of storing anything. Without ``subresource`` the type is added
        to the registry (discovery lists its ``verbs``; give it ``verbs=("create",)``)
        and every other method on it is 405 MethodNotAllowed, as for kube's reviews; with
        one, the type's strategy must list the subresource. ``protobuf_decoder`` turns a
        ``application/vnd.kubernetes.protobuf`` body into its JSON form (kubectl sends
        reviews and TokenRequests as protobuf); without one, the decoder
        ``auth.protobody`` has for the type's kind (the authentication and authorization
        reviews), else such a body is 415."""
        if not subresource and self.registry.get(rtype.group, rtype.resource) is not rtype:
            self.registry.add(rtype)
        self.creates[(rtype.group, rtype.resource, subresource)] = handler
        self._create_resources.add(rtype.resource)
        if protobuf_decoder is not None:
            self._create_decoders[(rtype.group, rtype.resource, subresource)] = protobuf_decoder

    # -- lifecycle ----------------------------------------------------------------

    def _bootstrap(self) -> None:
        """Initial namespaces, and resource types for the CRDs already in storage."""
        namespaces = self.registry.get("", "namespaces")
        assert namespaces is not None
        for name in INITIAL_NAMESPACES:
            if self.store.get(namespaces.key("", name)) is None:
                self.api.create(
                    Target(namespaces, namespaces.storage_version, None),
                    {
                        "apiVersion": "v1",
                        "kind": "Namespace",
                        "metadata": {"name": name},
                        "spec": {},
                    },
                    {},
                )
        self.controllers.bootstrap()

    def advertise(self, address: str, port: int) -> None:
        """The address and port clients reach this server at: the ``default/kubernetes``
        Service (first address of the service range, 443 → ``port``), its Endpoints and
        EndpointSlice (``address``:``port``) are created or put right now, and kept so
        (see ``kinds.kubernetes_service``). Without a call the server takes the address
        of the first request's connection (ASGI ``scope["server"]``)."""
        keeper = self.kubernetes_service
        if keeper is not None and (keeper.address, keeper.port) == (address, port):
            return
        first = self.kubernetes_service is None
        self.kubernetes_service = KubernetesService(
            self.api, self.registry, self.service_network.first_ip, address, port
        )
        if first:
            self.store.subscribe(self._on_kubernetes_service_event)
        self.kubernetes_service.reconcile()

    def _on_kubernetes_service_event(self, ev: Event) -> None:
        # a deleted default/kubernetes object comes back on the next loop turn (not inside
        # the store's notification); the periodic pass covers a server without a loop
        if ev.type != "DELETED" or ev.key not in KUBERNETES_SERVICE_KEYS:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        keeper = self.kubernetes_service
        if keeper is not None:
            loop.call_soon(keeper.reconcile)

    async def _kubernetes_service_loop(self) -> None:
        while True:
            await asyncio.sleep(KUBERNETES_SERVICE_INTERVAL)
            keeper = self.kubernetes_service
            if keeper is not None:
                try:
                    keeper.reconcile()
                except Exception:  # pragma: no cover - logged, never fatal
                    log.exception("default/kubernetes reconcile failed")

    async def start(self) -> None:
        """Start background work (controllers, compaction); idempotent."""
        if self.started:
            return
        self.started = True
        self.controllers.start()
        loop = asyncio.get_running_loop()
        self._tasks.append(loop.create_task(self._compaction_loop()))
        self._tasks.append(loop.create_task(self._kubernetes_service_loop()))

    async def stop(self) -> None:
        self.hub.close()
        self.controllers.stop()
        self.chain.pool.close()  # idle keep-alive connections to webhooks
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks.clear()
        self.started = False

    async def _compaction_loop(self) -> None:
        while True:
            await asyncio.sleep(self.compaction_interval)
            policy = getattr(self.store, "compact_by_policy", None)
            if policy is not None:
                try:
                    policy()
                except Exception:  # pragma: no cover - logged, never fatal
                    log.exception("compaction failed")

    # -- ASGI ----------------------------------------------------------------------

    async def __call__(self, scope: AsgiScope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "lifespan":
            await self._lifespan(receive, send)
            return
        if kind != "http":
            return
        if not self.started:
            await self.start()
        if self.kubernetes_service is None:
            server = scope.get("server")
            if server and server[1] is not None:
                self.advertise(_client_address(str(server[0])), int(server[1]))
        started = time.perf_counter()
        hosts = self.hosts
        if hosts is not None:
            # without authentication: a loopback (or allowed) Host, and no foreign web page
            host = None
            refusal = None
            for name, value in scope["headers"]:
                if name == b"host":
                    if host is None:
                        host = value
                elif name == b"origin" and refusal is None and not hosts.allows_origin(value):
                    refusal = hosts.origin_refusal(value)
            if not hosts.allows(host):
                assert host is not None
                refusal = hosts.refusal(host)
            if refusal is not None:
                await self._send_json(
                    send, 403, ApiError(403, "Forbidden", refusal, {}).to_status()
                )
                self.metrics.record(
                    non_resource_labels(scope["method"]), 403, time.perf_counter() - started
                )
                return
        try:
            user = self.guard.check(scope)
        except ApiError as err:
            await self._send_json(send, err.code, err.to_status())
            self.metrics.record(
                non_resource_labels(scope["method"]), err.code, time.perf_counter() - started
            )
            return
        user_token = CURRENT_USER.set(user)
        try:
            # served here, not in a coroutine of its own: one frame less per request
            method = scope["method"]
            if method == "GET" and not self.log_requests and not scope.get("query_string"):
                hit = self.reads.lookup(scope)
                if hit is not None:
                    await send(
                        {"type": "http.response.start", "status": 200, "headers": hit.headers}
                    )
                    await send({"type": "http.response.body", "body": hit.payload})
                    self.metrics.record(hit.labels, 200, time.perf_counter() - started)
                    return
            inflight = self.metrics.inflight
            kind = "readOnly" if method in ("GET", "HEAD", "OPTIONS") else "mutating"
            inflight[kind] += 1
            req = Request(method, scope["path"], {}, {}, b"")
            req.user = user
            status = 500
            try:
                status = await self._handle(req, scope, receive, send)
            finally:
                inflight[kind] -= 1
                elapsed = time.perf_counter() - started
                self.metrics.record(req.labels, status, elapsed)
                if self.log_requests:
                    q = scope.get("query_string", b"").decode()
                    log.info(
                        "%s %s%s %d %.1fms",
                        method,
                        scope["path"],
                        "?" + q if q else "",
                        status,
                        elapsed * 1000,
                    )
        finally:
            CURRENT_USER.reset(user_token)

    def _authorize_create_on_update(self, target: Target) -> None:
        """``ResourceApi.authorize_create_on_update``: the request's user may ``create``
        the object its PUT is about to create (the server's own writes: no user, no check)."""
        user = CURRENT_USER.get()
        if user is None:
            return
        rtype = target.rtype
        self.guard.check_create_on_update(
            Attributes(
                user,
                "create",
                target.namespace or "",
                rtype.group,
                target.version,
                rtype.resource,
                target.subresource or "",
                target.name or "",
            )
        )

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await self.start()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.stop()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _handle(self, req: Request, scope: AsgiScope, receive: Receive, send: Send) -> int:
        # ASGI servers hand header names over lowercased
        headers = req.headers = {
            k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]
        }
        raw_query = scope.get("query_string", b"")
        if raw_query:
            req.query = parse_query(raw_query)
        # the manager of a write without fieldManager is derived from the User-Agent
        agent = USER_AGENT.set(headers.get("user-agent", ""))
        try:
            declared = headers.get("content-length")
            if declared and declared.isdigit() and int(declared) > MAX_BODY:
                raise ApiError.too_large(f"Request entity too large: limit is {MAX_BODY}")
            message = await receive()
            if message["type"] == "http.request" and not message.get("more_body"):
                # the whole body in one message (every small request): no reading loop
                body = message.get("body", b"")
                if type(body) is not bytes:
                    body = bytes(body)
                if len(body) > MAX_BODY:
                    raise ApiError.too_large(f"Request entity too large: limit is {MAX_BODY}")
                req.body = body
            else:
                req.body = await self._read_body(receive, message)
            return await self._route(req, receive, send)
        except ClientGone:
            # the client left (or its body timed out) before its request was complete:
            # nothing of it is acted on, and there is no one to answer
            return 499
        except ApiError as err:
            # Warning headers gathered before the error go out with it, as kube-apiserver's
            # warning recorder writes them with whatever response is written; an error
            # may carry its own (``warnings``: admission warnings before a denial)
            carried = getattr(err, "warnings", None)
            warnings = req.warnings + [w for w in carried or () if isinstance(w, str)]
            await self._send_json(send, err.code, err.to_status(), warnings)
            return err.code
        except UnstorableObject as exc:
            # the storage boundary's backstop: the decoding limits normally refuse such
            # values first; nothing was stored
            await self._send_json(send, 400, ApiError.bad_request(str(exc)).to_status())
            return 400
        except StorageError as exc:
            # a stored value the server cannot read (an undecryptable Secret, a closed
            # store): kube's 500 InternalError with the storage layer's words; the cause
            # is known, so one log line and no traceback
            log.error("%s %s: %s", scope["method"], scope["path"], exc)
            await self._send_json(send, 500, ApiError.internal(str(exc)).to_status())
            return 500
        except Exception as exc:
            log.exception("internal error on %s %s", scope["method"], scope["path"])
            internal = ApiError.internal(str(exc) or type(exc).__name__)
            await self._send_json(send, 500, internal.to_status())
            return 500
        finally:
            USER_AGENT.reset(agent)
            # what the decoders kept of the body for its duplicate fields ends with it
            decode.forget()

    @staticmethod
    async def _read_body(receive: Receive, message: dict[str, Any]) -> bytes:
        """The request body whose first ASGI message is ``message`` (the declared length
        was checked): at most ``MAX_BODY`` bytes, else 413; ``ClientGone`` when the client
        leaves first."""
        chunks: list[bytes] = []
        size = 0
        while True:
            if message["type"] == "http.disconnect":
                raise ClientGone()
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > MAX_BODY:
                raise ApiError.too_large(f"Request entity too large: limit is {MAX_BODY}")
            chunks.append(chunk)
            if not message.get("more_body"):
                break
            message = await receive()
        return b"".join(chunks)

    async def _send_json(
        self,
        send: Send,
        status: int,
        body: Any,
        warnings: list[str] | None = None,
        content_type: bytes = b"application/json",
    ) -> None:
        # a create's or update's answer is the object just committed: encoded once
        payload = stored_encoding(body)
        if payload is None:
            payload = orjson.dumps(body)
        # the two messages of ``_send_payload``, sent here (one coroutine less per answer)
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": json_headers(payload, warnings, content_type),
            }
        )
        await send({"type": "http.response.body", "body": payload})

    @staticmethod
    async def _send_payload(
        send: Send, status: int, payload: bytes, headers: list[tuple[bytes, bytes]]
    ) -> None:
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": payload})

    async def _send_text(self, send: Send, status: int, text: str) -> None:
        payload = text.encode()
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"text/plain; charset=utf-8"),
                    (b"content-length", str(len(payload)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": payload})

    # -- routing -----------------------------------------------------------------

    async def _route(self, req: Request, receive: Receive, send: Send) -> int:
        # an ASGI path is already percent-decoded once (as Go's URL.Path, which kube's
        # RequestInfo splits): decoding it again would read "a%252Fb" as "a/b"
        stripped = req.path.strip("/")
        parts = stripped.split("/") if stripped else []
        if not parts:
            await self._send_json(send, 200, {"paths": discovery.root_paths(self.registry)})
            return 200
        head = parts[0]
        if head == "apis" and len(parts) > 3:
            # a group's resource (every custom resource): straight there
            return await self._resource(req, parts[1], parts[2], parts[3:], receive, send)
        is_resource = (head == "api" and len(parts) > 2) or (head == "apis" and len(parts) > 3)
        if not is_resource and req.method not in ("GET", "HEAD"):
            # discovery, OpenAPI, /version and the probes are read-only
            raise ApiError.method_not_allowed()
        if head == "metrics" and len(parts) == 1:
            payload = self.metrics.render()
            await self._send_payload(
                send,
                200,
                payload,
                [
                    (b"content-type", CONTENT_TYPE.encode()),
                    (b"content-length", str(len(payload)).encode()),
                ],
            )
            return 200
        if head in ("healthz", "livez", "readyz"):
            await self._send_text(send, 200, "ok")
            return 200
        if head == "version":
            await self._send_json(send, 200, discovery.version_info(__version__))
            return 200
        if head == "openapi":
            return await self._openapi(req, parts[1:], send)
        if head == "api":
            if len(parts) == 1:
                return await self._discovery(req, send, legacy=True)
            if parts[1] != "v1":
                raise ApiError.not_found_path()
            if len(parts) == 2:
                await self._send_json(send, 200, discovery.resource_list(self.registry, "", "v1"))
                return 200
            return await self._resource(req, "", "v1", parts[2:], receive, send)
        if head == "apis":
            if len(parts) == 1:
                return await self._discovery(req, send, legacy=False)
            group = parts[1]
            if len(parts) == 2:
                body = discovery.api_group(self.registry, group)
                if body is None:
                    raise ApiError.not_found_path()
                await self._send_json(send, 200, body)
                return 200
            version = parts[2]
            if len(parts) == 3:
                body = discovery.resource_list(self.registry, group, version)
                if body is None:
                    raise ApiError.not_found_path()
                await self._send_json(send, 200, body)
                return 200
            return await self._resource(req, group, version, parts[3:], receive, send)
        raise ApiError.not_found_path()

    async def _discovery(self, req: Request, send: Send, legacy: bool) -> int:
        aggregated = discovery.negotiate_aggregated(req.accept)
        if aggregated is not None:
            body, ctype = discovery.aggregated(self.registry, legacy, aggregated)
            await self._send_json(send, 200, body, content_type=ctype.encode())
            return 200
        if legacy:
            host = req.headers.get("host", "127.0.0.1")
            body = {
                "kind": "APIVersions",
                "versions": ["v1"],
                "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": host}],
            }
        else:
            body = discovery.api_group_list(self.registry)
        await self._send_json(send, 200, body)
        return 200

    async def _openapi(self, req: Request, parts: list[str], send: Send) -> int:
        if parts == ["v2"]:
            return await self._openapi_v2(req, send)
        if not parts or parts[0] != "v3":
            raise ApiError.not_found_path()
        reply = openapi.serve(
            self.registry,
            "/".join(parts[1:]),
            req.query,
            req.accept,
            req.headers.get("if-none-match", ""),
        )
        if reply is None:
            raise ApiError.not_found_path()
        await self._send_payload(send, reply.status, reply.body, reply.headers)
        return reply.status

    async def _openapi_v2(self, req: Request, send: Send) -> int:
        """``/openapi/v2``: JSON, or gnostic protobuf when the Accept header prefers it;
        304 when ``If-None-Match`` names the current ETag."""
        doc = openapi_v2.encoded(self.registry)
        if req.headers.get("if-none-match") == doc.etag:
            await self._send_payload(send, 304, b"", [(b"etag", doc.etag.encode())])
            return 304
        if openapi_v2.wants_protobuf(req.accept):
            payload, ctype = doc.protobuf(), openapi_v2.PROTOBUF_CONTENT_TYPE.encode()
        else:
            payload, ctype = doc.json, b"application/json"
        headers = json_headers(payload, None, ctype)
        headers.append((b"etag", doc.etag.encode()))
        headers.append((b"vary", b"Accept"))
        await self._send_payload(send, 200, payload, headers)
        return 200

    def _resolve(self, group: str, version: str, segs: list[str]) -> Target:
        reg = self.registry
        if not segs or not segs[0]:
            raise ApiError.not_found_path()
        if segs[0] == "namespaces" and len(segs) >= 3:
            rtype = reg.lookup(group, version, segs[2])
            if rtype is not None and rtype.namespaced:
                if len(segs) > 5:
                    raise ApiError.not_found_path()
                return Target(
                    rtype,
                    version,
                    segs[1],
                    segs[3] if len(segs) > 3 else None,
                    segs[4] if len(segs) > 4 else None,
                )
            if rtype is None and not _namespace_subresource(reg, group, version, segs):
                raise not_served(group, version, segs[2])
        rtype = reg.lookup(group, version, segs[0])
        if rtype is None:
            raise not_served(group, version, segs[0])
        if len(segs) > 3:
            raise ApiError.not_found_path()
        if rtype.namespaced and len(segs) > 1:
            raise ApiError.not_found_path()
        return Target(
            rtype,
            version,
            None,
            segs[1] if len(segs) > 1 else None,
            segs[2] if len(segs) > 2 else None,
        )

    def _decode(self, req: Request, target: Target | None = None) -> JSON:
        """The request body as a JSON object: JSON, YAML, or Kubernetes protobuf.

        Protobuf bodies are decoded for the built-in kinds ``protobuf.KINDS`` names (a
        create/update of ``target``) and for DeleteOptions (``target`` None); the object is
        then the one the same client would have sent as JSON. Protobuf for a custom
        resource (or a CRD) → 415, as custom resources accept JSON and YAML only.
        """
        ctype = req.content_type.split(";")[0].strip().lower()
        if ctype == protobuf.MEDIA_TYPE:
            if target is None:
                return protobuf.decode_delete_options(req.body)
            rtype = target.rtype
            if not rtype.builtin or (target.api_version, rtype.kind) not in protobuf.KINDS:
                what = (
                    "custom resources accept JSON and YAML only"
                    if not rtype.builtin
                    else f"kubewerk does not decode protobuf {rtype.kind} bodies; send JSON or YAML"
                )
                raise ApiError.unsupported_media_type(
                    "the body of the request was in an unknown format - accepted "
                    f"media types include: application/json, application/yaml ({what})"
                )
            return protobuf.decode_object(req.body, target.api_version, rtype.kind)
        # kube-apiserver reads an absent Content-Type as JSON and refuses every type it does
        # not serve: text/plain and forms, which a web page may send cross-origin without a
        # preflight, never reach a decoder
        if ctype not in _DECODED_TYPES:
            raise ApiError.unsupported_media_type(
                "the body of the request was in an unknown format - accepted media types include: "
                "application/json, application/yaml"
                + (
                    ""
                    if target is not None and not target.rtype.builtin
                    else ", application/vnd.kubernetes.protobuf"
                )
            )
        body = req.body
        if not body or body.isspace():  # ``not body.strip()``, without copying the body
            raise ApiError.bad_request("the body of the request was empty")
        try:
            data = (
                decode.yaml_value(req.body)
                if ctype == "application/yaml"
                else decode.json_value(req.body)
            )
        except decode.TooDeep as exc:
            raise ApiError.bad_request(str(exc)) from None
        except decode.DecodeError as exc:
            if ctype == "application/yaml":
                raise ApiError.bad_request(f"error converting YAML to JSON: {exc}") from None
            raise ApiError.bad_request(
                f"couldn't get version/kind; json parse error: {exc}"
            ) from None
        if not isinstance(data, dict):
            raise ApiError.bad_request(
                "couldn't get version/kind; json parse error: json: cannot unmarshal "
                f"{unmarshal_kind(data)} into Go value of type struct {{ APIVersion string "
                '"json:\\"apiVersion,omitempty\\""; Kind string "json:\\"kind,omitempty\\"" }'
            )
        return data

    async def _predecode(self, req: Request) -> Token[Any] | None:
        """Decode the big body of a write in a worker thread, the way the request's own
        code will decode it (``decode.predecode``): a create's, update's or DeleteOptions'
        JSON or YAML (``_decode``), a patch's JSON or its apply configuration (YAML). The
        request's code then takes the result (value or error) instead of decoding on the
        event loop; a body of another type, or of a method without one, is left alone."""
        ctype = req.content_type.split(";")[0].strip().lower()
        if req.method == "PATCH":
            if ctype != APPLY_YAML and ctype not in _JSON_PATCH_TYPES:
                return None
            return await decode.predecode(req.body, ctype == APPLY_YAML, "the patch")
        if req.method in ("POST", "PUT", "DELETE") and ctype in _DECODED_TYPES:
            return await decode.predecode(req.body, ctype == "application/yaml", "the object")
        return None

    def _delete_options(self, req: Request) -> JSON:
        """DeleteOptions from the body when there is one, else from the query (as
        kube-apiserver)."""
        body = self._decode(req) if req.body.strip() else None
        try:
            return decode.delete_options(body, req.query)
        except decode.DecodeError as exc:
            raise ApiError.bad_request(str(exc)) from None

    async def _resource(
        self,
        req: Request,
        group: str,
        version: str,
        segs: list[str],
        receive: Receive,
        send: Send,
        predecoded: bool = False,
    ) -> int:
        if not predecoded and len(req.body) > decode.OFFLOAD_BYTES:
            # a big body is decoded in a worker thread first: the loop serves others
            token = await self._predecode(req)
            try:
                return await self._resource(req, group, version, segs, receive, send, True)
            finally:
                if token is not None:
                    decode.release(token)
        target = self._resolve(group, version, segs)
        rtype = target.rtype
        deprecation = rtype.deprecated.get(version)
        # the same list as the request's: a deprecation warning also goes with an error
        notes = req.warnings
        if deprecation:
            notes.append(deprecation)
        sub = target.subresource
        if sub is not None:
            if target.name is None:
                raise ApiError.not_found_path()
            valid = (
                (sub == "status" and rtype.has_status(version))
                or (sub == "scale" and rtype.scale_of(version) is not None)
                or (sub in rtype.strategy.subresources)
            )
            if not valid:
                unsupported = UNSUPPORTED_SUBRESOURCES.get((rtype.group, rtype.resource, sub))
                if unsupported is not None:
                    raise ApiError(
                        405,
                        "MethodNotAllowed",
                        f"{rtype.resource}/{sub} is not supported by kubewerk: {unsupported}",
                        {"name": target.name, "kind": rtype.resource},
                    )
                if not rtype.builtin:
                    # apiextensions' crdHandler: a subresource the request's version does
                    # not declare is its NotFound of the resource and name
                    raise ApiError.not_found(rtype.resource, rtype.group, target.name)
                raise ApiError.not_found_path()
        method = req.method
        result: RestResponse
        api = self.api
        if rtype.resource in self._create_resources:
            create = self.creates.get((rtype.group, rtype.resource, sub or ""))
            if create is not None or (
                sub is None and (rtype.group, rtype.resource, "") in self.creates
            ):
                return await self._virtual_create(req, target, create, notes, send)
        watching = method == "GET" and query_flag(req.query, "watch")
        req.labels = labels = _resource_labels(req, target, watching)
        # a CRD converting through a webhook, addressed in a non-storage version
        converter = self.conversion.converter(target)
        if converter is not None and not watching:
            return await self.conversion.serve(converter, req, target, notes, send)
        if watching:
            stream = WatchStream(
                self.hub,
                api,
                target,
                req.query,
                req.accept,
                self.bookmark_interval,
                self.conversion.watch_converter(target) if converter is not None else None,
            )
            stream.open()
            # a watch is long-running: counted there, not among the in-flight requests
            metrics = self.metrics
            metrics.inflight["readOnly"] -= 1
            metrics.longrunning[labels] = metrics.longrunning.get(labels, 0) + 1
            try:
                await stream.run(receive, send, notes)
            finally:
                metrics.longrunning[labels] -= 1
                metrics.inflight["readOnly"] += 1
            return 200
        if method == "GET":
            if target.name is None:
                items, list_meta = api.list(target, req.query)
                if wants_table(req.accept):
                    body = table.to_table(
                        rtype, version, items, list_meta, req.query.get("includeObject", "")
                    )
                else:
                    body = {
                        "kind": rtype.list_kind,
                        "apiVersion": target.api_version,
                        "metadata": list_meta,
                        "items": items,
                    }
                await self._send_json(send, 200, body, notes)
                return 200
            result = api.get_scale(target) if sub == "scale" else api.get(target, req.query)
            if wants_table(req.accept) and sub == "scale" and rtype.crd_name is None:
                # a built-in kind's ScaleREST prints the Scale (kube's printScale)
                result.body = table.scale_table(result.body, req.query.get("includeObject", ""))
            elif wants_table(req.accept) and sub in (None, "status"):
                # StatusREST prints as its kind does (it delegates ConvertToTable)
                result.body = table.to_table(
                    rtype,
                    version,
                    [result.body],
                    {"resourceVersion": result.body["metadata"].get("resourceVersion", "")},
                    req.query.get("includeObject", ""),
                )
            elif sub is None and not req.query and self.reads.enabled:
                # answered as usual, and remembered for the next plain GET of this path
                payload = orjson.dumps(result.body)
                headers = json_headers(payload, notes)
                assert target.name is not None
                self.reads.remember(
                    req.path,
                    rtype,
                    rtype.key(target.namespace or "", target.name),
                    headers,
                    payload,
                    labels,
                )
                await self._send_payload(send, 200, payload, headers)
                return 200
        elif method == "POST":
            if target.name is not None:
                raise ApiError.method_not_supported(rtype.resource, rtype.group, "create")
            if self.chain.active(target):
                body = self._decode(req, target)
                if target.subresource:
                    result = api.create(target, body, req.query)  # refused there
                else:
                    result = await self.chain.create(target, body, req.query, len(req.body))
            else:
                # a big body's per-body work (typing, admission) runs off the loop; a
                # small one's is ``create`` itself (what ``create_async`` would call)
                body = self._decode(req, target)
                size = len(req.body)
                if size <= decode.OFFLOAD_BYTES:
                    result = api.create(target, body, req.query)
                else:
                    result = await api.create_async(target, body, req.query, size)
        elif method == "PUT":
            if target.name is None:
                raise ApiError.method_not_supported(rtype.resource, rtype.group, "update")
            if self.chain.active(target):
                result = await self.chain.update(target, self._decode(req, target), req.query)
            else:
                result = api.update(target, self._decode(req, target), req.query)
        elif method == "PATCH":
            if target.name is None:
                raise ApiError.method_not_supported(rtype.resource, rtype.group, "patch")
            if not req.body.strip():
                raise ApiError.bad_request("the body of the request was empty")
            if self.chain.active(target):
                result = await self.chain.patch(target, req.body, req.content_type, req.query)
            else:
                result = api.patch(target, req.body, req.content_type, req.query)
        elif method == "DELETE":
            if sub is not None:
                raise ApiError.method_not_supported(
                    f"{rtype.resource}/{sub}", rtype.group, "delete"
                )
            if target.name is None and "deletecollection" not in rtype.verbs:
                # kube registers no collection DELETE route for a storage without
                # DeleteCollection (namespaces): go-restful's 405, as a Status
                raise ApiError.method_not_allowed()
            refuse_immortal_delete(rtype.group, rtype.resource, target.name)
            opts = self._delete_options(req)
            chain = self.chain if self.chain.active(target) else None
            if target.name is None:
                result = (
                    await chain.delete_collection(target, opts, req.query)
                    if chain is not None
                    else api.delete_collection(target, opts, req.query)
                )
            elif chain is not None:
                result = await chain.delete(target, opts, req.query)
            else:
                result = api.delete(target, opts, req.query)
        else:
            raise ApiError.method_not_allowed(method)
        await self._send_json(send, result.status, result.body, notes + result.warnings)
        return result.status

    async def _virtual_create(
        self,
        req: Request,
        target: Target,
        handler: CreateHandler | None,
        notes: list[str],
        send: Send,
    ) -> int:
        """A create answered by ``handler`` (see ``serve_create``); 405 for any other
        method, or for a create of a named object of a virtual type."""
        rtype = target.rtype
        req.labels = _resource_labels(req, target, False)
        if (
            req.method != "POST"
            or handler is None
            or (target.subresource is None and target.name is not None)
        ):
            raise ApiError.method_not_allowed(
                details={"group": rtype.group, "kind": rtype.resource}
                if rtype.group
                else {"kind": rtype.resource}
            )
        decoder = self._create_decoders.get((rtype.group, rtype.resource, target.subresource or ""))
        if decoder is None and target.subresource is None:
            # the reviews kubectl sends as protobuf (auth can-i, whoami)
            from kubewerk.apiserver.auth.protobody import decoder as review_decoder

            decoder = review_decoder(rtype.kind)
        ctype = req.content_type.split(";")[0].strip().lower()
        body = (
            decoder(req.body)
            if decoder is not None and ctype == protobuf.MEDIA_TYPE
            else self._decode(req, target)
        )
        result = handler(target, body, req.user, req.query)
        await self._send_json(send, result.status, result.body, notes + result.warnings)
        return result.status


_DECODED_TYPES = ("", "application/json", "application/yaml")
"""The body media types ``_decode`` reads as text (an absent Content-Type is JSON)."""
_JSON_PATCH_TYPES = (
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
)

_VERBS = {"GET": "GET", "POST": "POST", "PUT": "PUT", "PATCH": "PATCH", "DELETE": "DELETE"}


_NO_KUBELET = "it runs no containers (there is no kubelet)"
UNSUPPORTED_SUBRESOURCES: dict[tuple[str, str, str], str] = {
    ("", "pods", "log"): _NO_KUBELET + ", so there are no logs to read",
    ("", "pods", "exec"): _NO_KUBELET + ", so there is nothing to exec into",
    ("", "pods", "attach"): _NO_KUBELET + ", so there is nothing to attach to",
    ("", "pods", "portforward"): _NO_KUBELET + ", so there is no port to forward",
    ("", "pods", "proxy"): _NO_KUBELET + ", so there is nothing to proxy to",
    ("", "pods", "ephemeralcontainers"): _NO_KUBELET,
    ("", "services", "proxy"): _NO_KUBELET + ", so there is nothing to proxy to",
    ("", "nodes", "proxy"): "its nodes are not real machines, there is nothing to proxy to",
}
"""Subresources Kubernetes serves that kubewerk answers with 405 MethodNotAllowed (the
code kube-apiserver gives an operation a resource does not support) and why."""


def _client_address(host: str) -> str:
    """An address a client can reach: a wildcard bind becomes its loopback address."""
    if host in ("0.0.0.0", ""):
        return "127.0.0.1"
    if host == "::":
        return "::1"
    return host


def _namespace_subresource(reg: Registry, group: str, version: str, segs: list[str]) -> bool:
    """``namespaces/{name}/{sub}`` names a subresource of the served Namespace type."""
    namespaces = reg.lookup(group, version, "namespaces")
    if namespaces is None or namespaces.namespaced or len(segs) != 3:
        return False
    sub = segs[2]
    return (
        (sub == "status" and namespaces.status_subresource)
        or (sub == "scale" and namespaces.scale is not None)
        or sub in namespaces.strategy.subresources
    )


def not_served(group: str, version: str, resource: str) -> ApiError:
    """404 NotFound for a resource this server does not serve. The message starts with
    the Go mux's text (which clients and scripts match on) and names what is not served
    (``the server could not find the requested resource: deployments.apps/v2 is not
    served by kubewerk``) — ``kubectl get --raw`` and every client that prints a Status
    shows it; ``details`` carry the group and resource, and a cause says the same."""
    what = f"{resource}.{group}/{version}" if group else f"{resource}/{version}"
    served = f"{what} is not served by kubewerk"
    return ApiError(
        404,
        "NotFound",
        f"the server could not find the requested resource: {served}",
        {
            **({"group": group} if group else {}),
            "kind": resource,
            "causes": [{"reason": "NotFound", "message": served}],
        },
    )


def _resource_labels(req: Request, target: Target, watching: bool) -> RequestLabels:
    """kube-apiserver's metric labels for a request to a resource (its RequestInfo verb,
    ``resource``/``namespace``/``cluster`` scope, and dry run)."""
    rtype = target.rtype
    method = req.method
    if watching:
        verb = "WATCH"
    elif target.name is None and method == "GET":
        verb = "LIST"
    elif target.name is None and method == "DELETE":
        verb = "DELETECOLLECTION"
    elif method == "PATCH" and req.content_type.startswith("application/apply-patch"):
        verb = "APPLY"
    else:
        verb = _VERBS.get(method, method)
    scope = (
        "resource"
        if target.name is not None
        else "namespace"
        if target.namespace is not None
        else "cluster"
    )
    dry = req.query.get("dryRun", "")
    return (
        verb,
        "All" if dry == "All" else "",
        rtype.group,
        target.version,
        rtype.resource,
        target.subresource or "",
        scope,
        "apiserver",
    )


__all__ = ["ApiServer", "ServedResource"]
