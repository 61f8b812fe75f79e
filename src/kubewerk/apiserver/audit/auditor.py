"""The audit log of the embedded API server: kube-apiserver's audit events, per request.

``Auditor(policy, sink)`` decides with the ``Policy`` what each request logs and hands
``audit.k8s.io/v1`` ``Event`` objects to ``sink`` (a ``LogWriter``: JSON lines, never
blocking). ``Auditor.wrap(app)`` puts it in front of an ASGI app (``ApiServer``); the
entry points a server calls without the wrapper are ``begin(scope)`` (one ``AuditRecord``
per request) and the record's ``response_started``, ``response_body`` and ``complete``
(and ``panic``); ``attach(store)`` lets the auditor see the writes each request commits.

What an event holds, as kube-apiserver writes it: ``auditID`` (the request's ``Audit-ID``
header, else a new UUID; every response carries it back as ``Audit-Id``), ``stage``,
``requestURI``, ``verb`` (kube's API verb, the lower-case method for non-resource URLs),
``user`` (the authenticated user; ``{}`` when authentication failed),
``impersonatedUser``, ``sourceIPs`` (``X-Forwarded-For``, ``X-Real-Ip``, then the peer),
``userAgent``, ``objectRef``, ``responseStatus`` (``{"metadata": {}, "code": N}``, with
``status``/``reason``/``message`` for a failure), ``requestObject`` (level ``Request`` and
above, when the body is JSON or YAML), ``responseObject`` (``RequestResponse``, not for
watches, at most ``MAX_CAPTURED_BYTES``), ``requestReceivedTimestamp``,
``stageTimestamp`` (RFC 3339, microseconds) and ``annotations``.

Stages: ``RequestReceived`` (written when the user is known, i.e. when the response
starts, with the time the request arrived), ``ResponseStarted`` (watches only, as kube
emits it for long-running requests), ``ResponseComplete``, ``Panic`` (the app raised).

The policy is evaluated on the authenticated user (as kube-apiserver audits before
impersonation). The user comes from ``scope["kubewerk.requester"]`` when the server sets
it, else from ``auth.types.request_user()``; for an impersonating request without the
scope key the requester is authenticated again through the app's ``guard``.

Custom resources: each write a request commits to a custom resource (seen through the
store's subscription, matched to the request by a context variable) adds the annotations
``kubewerk.dev/spec-patch`` (the RFC 6902 patch turning ``{"spec": old}`` — ``{}`` for
a create — into ``{"spec": new}``; ``[{"op": "remove", "path": "/spec"}]`` for the
removal from storage), ``kubewerk.dev/storage-event`` (ADDED, MODIFIED, DELETED),
``kubewerk.dev/resource-version`` (the revision written) and, from the W3C
``traceparent`` header, ``kubewerk.dev/trace-id``. ``kubewerk audit history`` replays
them (``history``).
"""

from __future__ import annotations

import contextvars
import time
import uuid
from collections.abc import Awaitable, Callable, MutableMapping
from datetime import UTC, datetime
from typing import Any, Final, Protocol

import orjson
import yaml

from kubewerk.apiserver.audit.policy import NOT_LOGGED, Policy, RuleDecision
from kubewerk.apiserver.audit.specpatch import spec_patch
from kubewerk.apiserver.auth.requestinfo import RequestInfo, request_info
from kubewerk.apiserver.auth.types import Attributes, UserInfo, request_user
from kubewerk.apiserver.querystring import parse_query
from kubewerk.apiserver.storage.base import Event, Store

__all__ = [
    "ANNOTATION_EVENT",
    "ANNOTATION_RV",
    "ANNOTATION_SPEC_PATCH",
    "ANNOTATION_TRACE_ID",
    "MAX_CAPTURED_BYTES",
    "AuditRecord",
    "Auditor",
]

ANNOTATION_SPEC_PATCH: Final = "kubewerk.dev/spec-patch"
ANNOTATION_TRACE_ID: Final = "kubewerk.dev/trace-id"
ANNOTATION_EVENT: Final = "kubewerk.dev/storage-event"
ANNOTATION_RV: Final = "kubewerk.dev/resource-version"
MAX_CAPTURED_BYTES: Final = 4 * 1024 * 1024
"""Request and response bodies larger than this are not put into events."""
MAX_WRITES: Final = 16
"""Writes of one request kept for its spec patch (a deletecollection makes more)."""

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
Asgi = Callable[[Scope, Receive, Send], Awaitable[None]]

_CURRENT: contextvars.ContextVar[AuditRecord | None] = contextvars.ContextVar(
    "kubewerk_audit_record", default=None
)
_NO_USER: Final = UserInfo("")


class Sink(Protocol):
    """Where events go (``LogWriter``); ``write`` must not block."""

    def write(self, event: dict[str, Any]) -> bool: ...


_second_text: tuple[int, str] = (-1, "")


def micro_time(t: float) -> str:
    """``metav1.MicroTime`` text: RFC 3339 in UTC with six fractional digits.

    The text of the whole second is formatted once per second (``strftime`` is most of
    an event's cost otherwise).
    """
    global _second_text
    micros = round(t * 1_000_000)
    second, fraction = divmod(micros, 1_000_000)
    cached = _second_text
    if cached[0] != second:
        cached = _second_text = (
            second,
            datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%S"),
        )
    return f"{cached[1]}.{fraction:06d}Z"


def trace_id(traceparent: str) -> str:
    """The trace id of a W3C ``traceparent`` (``00-<32 hex>-<16 hex>-<2 hex>``), or ""."""
    parts = traceparent.strip().split("-")
    if len(parts) < 4 or len(parts[0]) != 2 or len(parts[1]) != 32:
        return ""
    tid = parts[1].lower()
    if tid == "0" * 32 or any(c not in "0123456789abcdef" for c in tid):
        return ""
    return tid


class Auditor:
    """Turns requests into audit events (see the module doc).

    ``is_custom(group, resource)`` says which resources get spec patches (``wrap`` sets it
    from the app's registry when it has one). ``clock`` gives wall-clock seconds.
    """

    def __init__(
        self,
        policy: Policy,
        sink: Sink,
        *,
        is_custom: Callable[[str, str], bool] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.policy = policy
        self.sink = sink
        self.is_custom = is_custom or (lambda group, resource: False)
        self.clock = clock
        self.events = 0
        self.levels: dict[str, int] = {}
        self.guard: Any = None
        self._unsubscribe: Callable[[], None] | None = None

    # -- entry points ----------------------------------------------------------------

    def begin(self, scope: Scope) -> AuditRecord:
        """A record for the request ``scope`` describes (received now)."""
        return AuditRecord(self, scope, self.clock())

    def attach(self, store: Store) -> None:
        """Watch ``store``'s commits: each is added to the record of the request making it."""
        self.detach()
        self._unsubscribe = store.subscribe(_on_commit)

    def detach(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    def close(self) -> None:
        """Stop watching the store and close the sink (its queued events are written)."""
        self.detach()
        close = getattr(self.sink, "close", None)
        if close is not None:
            close()

    def wrap(self, app: Any) -> Asgi:
        """``app`` with every HTTP request audited (and ``/metrics`` carrying the audit
        counters). Uses ``app.registry`` (custom resources), ``app.store`` (writes) and
        ``app.guard`` (impersonating requesters) when ``app`` has them."""
        registry = getattr(app, "registry", None)
        if registry is not None:

            def is_custom(group: str, resource: str) -> bool:
                rtype = registry.get(group, resource)
                return rtype is not None and getattr(rtype, "crd_name", None) is not None

            self.is_custom = is_custom
        store = getattr(app, "store", None)
        if store is not None:
            self.attach(store)
        self.guard = getattr(app, "guard", None)
        return AuditMiddleware(app, self)

    def emit(self, event: dict[str, Any]) -> None:
        """Count ``event`` and hand it to the sink."""
        self.events += 1
        level = event["level"]
        self.levels[level] = self.levels.get(level, 0) + 1
        self.sink.write(event)

    def metrics_text(self) -> bytes:
        """kube-apiserver's audit metric families, Prometheus text format."""
        sink = self.sink
        errors = getattr(sink, "dropped", 0) + getattr(sink, "failed", 0)
        lines = [
            "# HELP apiserver_audit_event_total Counter of audit events generated and sent "
            "to the audit backend.",
            "# TYPE apiserver_audit_event_total counter",
            f"apiserver_audit_event_total {float(self.events)}",
            "# HELP apiserver_audit_error_total Counter of audit events that failed to be "
            "audited properly (dropped from a full backlog or not written). Plugin "
            "identifies the plugin affected by the error.",
            "# TYPE apiserver_audit_error_total counter",
            f'apiserver_audit_error_total{{plugin="log"}} {float(errors)}',
            "# HELP apiserver_audit_level_total Counter of policy levels for audit events "
            "(1 per request).",
            "# TYPE apiserver_audit_level_total counter",
        ]
        for level, n in sorted(self.levels.items()):
            lines.append(f'apiserver_audit_level_total{{level="{level}"}} {float(n)}')
        return ("\n".join(lines) + "\n").encode()


def _on_commit(ev: Event) -> None:
    # the policy decides when the response starts, after the commit: keep it until then
    record = _CURRENT.get()
    if record is not None:
        record.add_write(ev)


class AuditRecord:
    """One request's audit state, from arrival to its last event."""

    __slots__ = (
        "_auditor",
        "_info",
        "_query",
        "audit_id",
        "completed",
        "decided",
        "decision",
        "impersonated",
        "received",
        "request_chunks",
        "request_size",
        "response_chunks",
        "response_size",
        "response_type",
        "scope",
        "started",
        "status",
        "user",
        "writes",
    )

    def __init__(self, auditor: Auditor, scope: Scope, received: float) -> None:
        self._auditor = auditor
        self.scope = scope
        self.received = received
        self.audit_id = _header(scope, b"audit-id") or str(uuid.uuid4())
        self.decision: RuleDecision = NOT_LOGGED
        self.decided = self.started = self.completed = False
        self.status = 0
        self.user: UserInfo | None = None
        self.impersonated: UserInfo | None = None
        self.request_chunks: list[bytes] = []
        self.request_size = 0
        self.response_chunks: list[bytes] = []
        self.response_size = 0
        self.response_type = ""
        self.writes: list[Event] = []
        self._info: RequestInfo | None = None
        self._query: dict[str, str] | None = None

    # -- what the request is -----------------------------------------------------------

    @property
    def query(self) -> dict[str, str]:
        if self._query is None:
            raw = self.scope.get("query_string", b"")
            self._query = parse_query(raw)
        return self._query

    @property
    def info(self) -> RequestInfo:
        if self._info is None:
            self._info = request_info(self.scope["method"], self.scope["path"], self.query)
        return self._info

    def decide(self, user: UserInfo | None, impersonated: UserInfo | None = None) -> None:
        """Evaluate the policy for the (authenticated) ``user``; None: not authenticated."""
        self.decided = True
        self.user, self.impersonated = user, impersonated
        info = self.info
        attrs = Attributes.from_request_info(info, user or _NO_USER)
        self.decision = self._auditor.policy.evaluate(attrs)

    def add_write(self, ev: Event) -> None:
        """A commit made while serving this request (called from the store)."""
        if len(self.writes) < MAX_WRITES:
            self.writes.append(ev)

    def request_body(self, chunk: bytes) -> None:
        """A piece of the request body (kept while within ``MAX_CAPTURED_BYTES``)."""
        self.request_size += len(chunk)
        if self.request_size <= MAX_CAPTURED_BYTES:
            self.request_chunks.append(chunk)

    # -- stages ------------------------------------------------------------------------

    def response_started(self, status: int, content_type: str = "") -> None:
        """The response begins: write ``RequestReceived`` (and ``ResponseStarted`` for a
        watch)."""
        self.status = status
        self.response_type = content_type
        self.started = True
        if not self.decided:
            self.decide(*_users(self._auditor, self.scope))
        d = self.decision
        if not d.logged:
            return
        if "RequestReceived" not in d.omit_stages:
            self._emit("RequestReceived", self.received, with_response=False)
        if self.info.verb == "watch" and "ResponseStarted" not in d.omit_stages:
            self._emit("ResponseStarted", self._auditor.clock(), with_response=False)

    def response_body(self, chunk: bytes) -> None:
        """A piece of the response body (kept when the event will carry it)."""
        d = self.decision
        if not d.logged or self.info.verb == "watch":
            return
        if not (d.with_response or self.status >= 400):
            return
        self.response_size += len(chunk)
        if self.response_size <= MAX_CAPTURED_BYTES:
            self.response_chunks.append(chunk)

    def complete(self) -> None:
        """The response is finished: write ``ResponseComplete``."""
        if self.completed:
            return
        self.completed = True
        if not self.started:
            self.response_started(self.status or 500)
        d = self.decision
        if d.logged and "ResponseComplete" not in d.omit_stages:
            self._emit("ResponseComplete", self._auditor.clock(), with_response=True)

    def panic(self, exc: BaseException) -> None:
        """The app raised ``exc`` instead of answering: write ``Panic``."""
        if self.completed:
            return
        self.completed = True
        if not self.decided:
            self.decide(*_users(self._auditor, self.scope))
        d = self.decision
        self.status = 500
        if d.logged and "Panic" not in d.omit_stages:
            event = self._event("Panic", self._auditor.clock(), with_response=False)
            event["responseStatus"] = {
                "metadata": {},
                "status": "Failure",
                "message": f"APIServer panic'd: {exc!r}",
                "reason": "InternalError",
                "code": 500,
            }
            self._auditor.emit(event)

    # -- the event ---------------------------------------------------------------------

    def _emit(self, stage: str, at: float, *, with_response: bool) -> None:
        self._auditor.emit(self._event(stage, at, with_response=with_response))

    def _event(self, stage: str, at: float, *, with_response: bool) -> dict[str, Any]:
        scope, info, d = self.scope, self.info, self.decision
        raw_query = scope.get("query_string", b"")
        uri = scope["path"] + ("?" + raw_query.decode("latin-1") if raw_query else "")
        event: dict[str, Any] = {
            "kind": "Event",
            "apiVersion": "audit.k8s.io/v1",
            "level": d.level,
            "auditID": self.audit_id,
            "stage": stage,
            "requestURI": uri,
            "verb": info.verb,
            "user": self.user.to_json() if self.user is not None and self.user.name else {},
        }
        if self.impersonated is not None:
            event["impersonatedUser"] = self.impersonated.to_json()
        event["sourceIPs"] = _source_ips(scope)
        agent = _header(scope, b"user-agent")
        if agent:
            event["userAgent"] = agent
        if info.resource_request:
            event["objectRef"] = self._object_ref()
        if with_response or stage == "ResponseStarted":
            event["responseStatus"] = self._response_status()
        if d.with_request and self.request_chunks and self.request_size <= MAX_CAPTURED_BYTES:
            obj = _decode_body(b"".join(self.request_chunks), _header(scope, b"content-type"))
            if obj is not None:
                event["requestObject"] = _strip_managed(obj) if d.omit_managed_fields else obj
        if (
            with_response
            and d.with_response
            and info.verb != "watch"
            and self.response_chunks
            and self.response_size <= MAX_CAPTURED_BYTES
        ):
            obj = _decode_body(b"".join(self.response_chunks), self.response_type)
            if obj is not None:
                event["responseObject"] = _strip_managed(obj) if d.omit_managed_fields else obj
        event["requestReceivedTimestamp"] = micro_time(self.received)
        event["stageTimestamp"] = micro_time(at)
        annotations = self._annotations() if with_response else {}
        if annotations:
            event["annotations"] = annotations
        return event

    def _object_ref(self) -> dict[str, Any]:
        info = self.info
        ref: dict[str, Any] = {"resource": info.resource}
        namespace, name = info.namespace, info.name
        written = self._single_key_writes()
        if written:
            meta = written[-1].obj.get("metadata") or {}
            name = name or meta.get("name", "")
            namespace = namespace or meta.get("namespace", "")
        if namespace:
            ref["namespace"] = namespace
        if name:
            ref["name"] = name
        if written:
            meta = written[-1].obj.get("metadata") or {}
            if meta.get("uid"):
                ref["uid"] = meta["uid"]
        if info.api_group:
            ref["apiGroup"] = info.api_group
        if info.api_version:
            ref["apiVersion"] = info.api_version
        if written:
            ref["resourceVersion"] = str(written[-1].revision)
        if info.subresource:
            ref["subresource"] = info.subresource
        return ref

    def _response_status(self) -> dict[str, Any]:
        out: dict[str, Any] = {"metadata": {}}
        if self.status >= 400 and self.response_chunks:
            body = _decode_body(b"".join(self.response_chunks), self.response_type)
            if isinstance(body, dict) and body.get("kind") == "Status":
                for field in ("status", "message", "reason", "details"):
                    if body.get(field):
                        out[field] = body[field]
        out["code"] = self.status
        return out

    def _single_key_writes(self) -> list[Event]:
        """The request's writes when they all went to one key (else none)."""
        writes = self.writes
        if not writes or len(writes) >= MAX_WRITES:
            return []
        key = writes[0].key
        return writes if all(w.key == key for w in writes) else []

    def _annotations(self) -> dict[str, str]:
        out: dict[str, str] = {}
        info = self.info
        written = self._single_key_writes()
        if written and self._auditor.is_custom(info.api_group, info.resource):
            first, last = written[0], written[-1]
            old = first.prev if first.type != "ADDED" else None
            new = None if last.type == "DELETED" else last.obj
            out[ANNOTATION_SPEC_PATCH] = orjson.dumps(spec_patch(old, new)).decode()
            out[ANNOTATION_EVENT] = last.type
            out[ANNOTATION_RV] = str(last.revision)
            tid = trace_id(_header(self.scope, b"traceparent"))
            if tid:
                out[ANNOTATION_TRACE_ID] = tid
        return out


class AuditMiddleware:
    """An ASGI app auditing every HTTP request to ``app`` through ``auditor``."""

    def __init__(self, app: Any, auditor: Auditor) -> None:
        self.app = app
        self.auditor = auditor

    def __getattr__(self, name: str) -> Any:
        # the wrapped ApiServer's attributes (store, registry, start/stop...) stay reachable
        return getattr(self.app, name)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        auditor = self.auditor
        record = auditor.begin(scope)
        token = _CURRENT.set(record)
        capture_request = auditor.policy.may_log_bodies
        metrics = scope["path"] == "/metrics" and scope["method"] == "GET"
        held: list[Message] = []
        audit_header = (b"audit-id", record.audit_id.encode("latin-1", "replace"))

        async def audited_receive() -> Message:
            message = await receive()
            if capture_request and message.get("type") == "http.request":
                chunk = message.get("body", b"")
                if chunk:
                    record.request_body(chunk)
            return message

        async def audited_send(message: Message) -> None:
            kind = message["type"]
            if kind == "http.response.start":
                headers = list(message.get("headers", ()))
                headers.append(audit_header)
                content_type = ""
                for k, v in headers:
                    if k == b"content-type":
                        content_type = v.decode("latin-1")
                message = {**message, "headers": headers}
                record.response_started(int(message["status"]), content_type)
                if metrics and message["status"] == 200:
                    held.append(message)
                    return
            elif kind == "http.response.body":
                chunk = message.get("body", b"")
                if chunk:
                    record.response_body(chunk)
                if held:
                    held.append(message)
                    if message.get("more_body"):
                        return
                    await _send_metrics(send, held, auditor.metrics_text())
                    held.clear()
                    record.complete()
                    return
                if not message.get("more_body"):
                    await send(message)
                    record.complete()
                    return
            await send(message)

        try:
            await self.app(scope, audited_receive, audited_send)
        except BaseException as exc:
            record.panic(exc)
            raise
        finally:
            if not record.completed and record.started:
                record.complete()
            _CURRENT.reset(token)


async def _send_metrics(send: Send, held: list[Message], extra: bytes) -> None:
    """Send a held ``/metrics`` answer with the audit families appended."""
    start, bodies = held[0], held[1:]
    payload = b"".join(m.get("body", b"") for m in bodies) + extra
    headers = [(k, v) for k, v in start.get("headers", ()) if k != b"content-length"]
    headers.append((b"content-length", str(len(payload)).encode()))
    await send({**start, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


def _users(auditor: Auditor, scope: Scope) -> tuple[UserInfo | None, UserInfo | None]:
    """(the authenticated user, the impersonated user or None) of the request."""
    explicit = scope.get("kubewerk.requester")
    served = request_user()
    if isinstance(explicit, UserInfo):
        return explicit, (served if served is not None and served != explicit else None)
    if served is None:
        return None, None
    if not _header(scope, b"impersonate-user") and not _header(scope, b"impersonate-uid"):
        return served, None
    guard = auditor.guard
    authenticator = getattr(guard, "authenticator", None)
    if authenticator is None:
        from kubewerk.apiserver.auth.types import ANONYMOUS

        return ANONYMOUS, served
    try:
        from kubewerk.apiserver.auth.authn import peer_certificate

        requester = authenticator.authenticate(
            _header(scope, b"authorization"), peer_certificate(dict(scope))
        )
    except Exception:
        requester = None
    return (requester if isinstance(requester, UserInfo) else None), served


def _header(scope: Scope, name: bytes) -> str:
    for k, v in scope.get("headers", ()):
        if k == name:
            return str(v.decode("latin-1"))
    return ""


def _source_ips(scope: Scope) -> list[str]:
    ips: list[str] = []
    forwarded = _header(scope, b"x-forwarded-for")
    if forwarded:
        ips.extend(p.strip() for p in forwarded.split(",") if p.strip())
    real = _header(scope, b"x-real-ip").strip()
    if real and real not in ips:
        ips.append(real)
    client = scope.get("client")
    if client and client[0] not in ips:
        ips.append(str(client[0]))
    return ips


def _decode_body(body: bytes, content_type: str) -> Any:
    """A JSON or YAML body as a value; None for anything else or undecodable."""
    if not body:
        return None
    ct = content_type.split(";", 1)[0].strip().lower()
    try:
        if ct.endswith("json") or ct == "":
            return orjson.loads(body)
        if ct.endswith("yaml"):
            return yaml.load(body, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except (orjson.JSONDecodeError, yaml.YAMLError, RecursionError, ValueError):
        return None
    return None


def _strip_managed(obj: Any) -> Any:
    """``obj`` without ``metadata.managedFields`` (also in a list's items)."""
    if not isinstance(obj, dict):
        return obj
    out = obj
    meta = obj.get("metadata")
    if isinstance(meta, dict) and "managedFields" in meta:
        out = {**obj, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}
    items = obj.get("items")
    if isinstance(items, list):
        out = {**out, "items": [_strip_managed(i) for i in items]}
    return out
