"""``WebhookApp``: the raw-ASGI application serving admission and conversion webhooks.

::

    app = WebhookApp()

    @app.validating(Database)
    async def check(db: Database, old: Database | None, req: AdmissionRequest) -> Allowed | Denied:
        ...

    @app.mutating(Database)
    async def default(db: Database, old: Database | None, req: AdmissionRequest) -> None:
        db.spec.replicas = db.spec.replicas or 1

    @app.patching(Database, "/default-fast")
    async def default_fast(db: Database, old: Database | None, req: AdmissionRequest,
                           patch: Patch) -> None:
        if db.spec.replicas is None:
            patch.set(("spec", "replicas"), 1)      # changes to db are NOT sent

    app.conversion("/convert")

Paths default to kubebuilder's (``/validate-<group with dots as dashes>-<version>-<kind
lowercased>``, ``/mutate-...``). The app is a thin router over raw ASGI (no framework):
host it in :class:`kubewerk.webhook.WebhookServer`, in any ASGI server, or call it in
process in tests.

HTTP contract (what kube-apiserver sees):

- ``POST`` a JSON body to a registered path; a decided review (allowed, denied, or a
  problem with the request's *content*: wrong kind, an object the model refuses, a
  handler error) is ``200`` with the review's ``response`` saying so;
- a body that cannot be a review is a ``Status`` error, which kube-apiserver treats as
  a failed call (its ``failurePolicy`` decides): ``400`` for a body that is not JSON,
  nests too deeply, or is not an AdmissionReview / ConversionReview with a request and
  uid; ``413`` beyond the path's body limit (see :mod:`kubewerk.webhook.limits`);
  ``415`` for a content type other than ``application/json``; ``404`` for an unknown
  path; ``405`` for another method (with ``Allow: POST``);
- no request makes it answer ``500`` with a traceback: an unexpected error is a ``500``
  ``Status`` with a one-line message, and is logged with its traceback.

Each path's requests are counted in controller-runtime's webhook metrics (see
:mod:`kubewerk.webhook.metrics`) on the registry given to :meth:`WebhookApp.use_registry`
(a fresh one otherwise).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from time import perf_counter as _clock
from typing import Any, TypeVar

import orjson
from prometheus_client import CollectorRegistry

from kubewerk.core.errors import ApiError
from kubewerk.model.resource import AnyResource
from kubewerk.webhook.admission import AdmissionEndpoint
from kubewerk.webhook.conversion import ConversionEndpoint
from kubewerk.webhook.limits import (
    MAX_ADMISSION_BODY_BYTES,
    MAX_CONVERSION_BODY_BYTES,
    BodyError,
    decode_body,
)
from kubewerk.webhook.metrics import PathMetrics, WebhookMetrics, metrics_for
from kubewerk.webhook.review import ReviewError, admission_json, parse_admission_review

__all__ = ["WebhookApp", "default_path"]

log = logging.getLogger("kubewerk.webhook")

F = TypeVar("F", bound=Callable[..., Any])

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

_JSON_HEADERS = [(b"content-type", b"application/json")]

_Headers = tuple[tuple[bytes, bytes], ...]
_ANSWER_HEADERS: dict[int, _Headers] = {}
_ANSWER_HEADERS_KEPT = 4096


def _answer_headers(length: int) -> _Headers:
    """The headers of a ``200`` JSON answer of ``length`` bytes: a tuple (ASGI takes any
    iterable of pairs; immutable, so one can be shared). The answers of one webhook
    mostly have one length (the uid has a fixed size), so the first
    ``_ANSWER_HEADERS_KEPT`` lengths are kept and reused."""
    found = _ANSWER_HEADERS.get(length)
    if found is None:
        found = (*_JSON_HEADERS, (b"content-length", str(length).encode()))
        if len(_ANSWER_HEADERS) < _ANSWER_HEADERS_KEPT:
            _ANSWER_HEADERS[length] = found
    return found


def default_path(prefix: str, model: type[AnyResource]) -> str:
    """kubebuilder's webhook path: ``/<prefix>-<group, dots as dashes>-<version>-<kind>``."""
    info = model.kind_info()
    return f"/{prefix}-{info.group.replace('.', '-')}-{info.version}-{info.kind.lower()}"


@dataclass(eq=False)
class _Route:
    endpoint: AdmissionEndpoint[Any] | ConversionEndpoint
    max_body: int
    metrics: PathMetrics | None = None
    admission: AdmissionEndpoint[Any] | None = None
    """``endpoint`` when it is an admission endpoint (answered through its
    :meth:`~AdmissionEndpoint.decide` and :func:`admission_json`), else None."""

    def __post_init__(self) -> None:
        if isinstance(self.endpoint, AdmissionEndpoint):
            self.admission = self.endpoint


class _TooLarge(Exception):
    pass


class WebhookApp:
    """The router: paths to admission and conversion endpoints (see the module doc)."""

    def __init__(self, *, registry: CollectorRegistry | None = None) -> None:
        self._routes: dict[str, _Route] = {}
        self._metrics: WebhookMetrics | None = None
        if registry is not None:
            self.use_registry(registry)

    # -- registration -----------------------------------------------------------------

    def _add(
        self, path: str, endpoint: AdmissionEndpoint[Any] | ConversionEndpoint, max_body: int
    ) -> None:
        if not path.startswith("/"):
            raise ValueError(f"webhook path {path!r} must start with '/'")
        if path in self._routes:
            raise ValueError(f"a webhook is already registered at {path}")
        if isinstance(max_body, bool) or not isinstance(max_body, int) or max_body <= 0:
            raise ValueError(f"max_body_bytes must be a positive number of bytes, not {max_body!r}")
        route = _Route(endpoint, max_body)
        if self._metrics is not None:
            route.metrics = self._metrics.path(path)
        self._routes[path] = route

    def validating(
        self,
        model: type[AnyResource],
        path: str | None = None,
        *,
        side_effects: bool = False,
        max_body_bytes: int = MAX_ADMISSION_BODY_BYTES,
    ) -> Callable[[F], F]:
        """Register ``(obj, old, req) -> Allowed | Denied`` as the validating webhook of
        ``model`` at ``path`` (default ``/validate-...``)."""

        return self._admission("validate", model, path, side_effects, max_body_bytes)

    def mutating(
        self,
        model: type[AnyResource],
        path: str | None = None,
        *,
        side_effects: bool = False,
        max_body_bytes: int = MAX_ADMISSION_BODY_BYTES,
    ) -> Callable[[F], F]:
        """Register ``(obj, old, req) -> None | Allowed | Denied | obj`` as the mutating
        webhook of ``model`` at ``path`` (default ``/mutate-...``); it changes ``obj``."""

        return self._admission("mutate", model, path, side_effects, max_body_bytes)

    def patching(
        self,
        model: type[AnyResource],
        path: str | None = None,
        *,
        side_effects: bool = False,
        max_body_bytes: int = MAX_ADMISSION_BODY_BYTES,
    ) -> Callable[[F], F]:
        """Register ``(obj, old, req, patch) -> None | Allowed | Denied`` as the mutating
        webhook of ``model`` at ``path`` (default ``/mutate-...``, as :meth:`mutating`),
        under the patching contract: the handler records its changes in ``patch`` (a
        :class:`kubewerk.webhook.patch.Patch` over the received object) and exactly those
        operations are answered. **Changes to ``obj`` are not sent**: it is for reading.
        Cheaper than :meth:`mutating` (no model dumps, no diff); see docs/webhook.md."""

        return self._admission("mutate", model, path, side_effects, max_body_bytes, patching=True)

    def _admission(
        self,
        verb: str,
        model: type[AnyResource],
        path: str | None,
        side_effects: bool,
        max_body_bytes: int,
        *,
        patching: bool = False,
    ) -> Callable[[F], F]:
        """The decorator of :meth:`validating` (``verb`` "validate"), :meth:`mutating` and
        :meth:`patching` ("mutate"): registers the handler at ``path`` or the default
        path of ``verb`` and ``model``, and returns it unchanged."""

        def register(func: F) -> F:
            where = path or default_path(verb, model)
            endpoint = AdmissionEndpoint(
                where, model, func, verb == "mutate", side_effects, patching=patching
            )
            self._add(where, endpoint, max_body_bytes)
            return func

        return register

    def conversion(
        self,
        path: str = "/convert",
        kinds: Iterable[type[AnyResource]] | None = None,
        *,
        max_body_bytes: int = MAX_CONVERSION_BODY_BYTES,
    ) -> ConversionEndpoint:
        """Serve ConversionReviews at ``path`` for the kinds of ``kinds`` (model classes;
        None: every kind with registered models), through the registered converters."""
        allowed = None
        if kinds is not None:
            allowed = frozenset((m.kind_info().group, m.kind_info().kind) for m in kinds)
        endpoint = ConversionEndpoint(path, allowed)
        self._add(path, endpoint, max_body_bytes)
        return endpoint

    @property
    def paths(self) -> list[str]:
        """The registered paths, in registration order."""
        return list(self._routes)

    @property
    def endpoints(self) -> dict[str, AdmissionEndpoint[Any] | ConversionEndpoint]:
        """What each path serves (its model, mutating or not, side effects; or the
        conversion and its kinds), in registration order: for manifests that register
        the webhooks (``kubewerk gen deploy``)."""
        return {path: route.endpoint for path, route in self._routes.items()}

    def use_registry(self, registry: CollectorRegistry) -> WebhookMetrics:
        """Count requests on ``registry`` (a manager's: ``manager.metrics.registry``)."""
        self._metrics = metrics_for(registry)
        for path, route in self._routes.items():
            route.metrics = self._metrics.path(path)
        return self._metrics

    @property
    def metrics(self) -> WebhookMetrics:
        """The metric families in use (on a registry of its own unless one was given)."""
        if self._metrics is None:
            self.use_registry(CollectorRegistry())
        assert self._metrics is not None
        return self._metrics

    # -- ASGI -------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            if scope["type"] == "lifespan":
                await _lifespan(receive, send)
            return
        # an HTTP request, served here rather than one coroutine further down
        route = self._routes.get(scope["path"])
        if route is None:
            await _status(send, ApiError.not_found_path())
            return
        metrics = route.metrics
        if metrics is None:
            metrics = self.metrics.path(scope["path"])
            route.metrics = metrics
        start = _clock()
        metrics.in_flight += 1
        code = 500
        try:
            code = await self._serve(route, scope, receive, send)
        finally:
            metrics.in_flight -= 1
            metrics.record(code, _clock() - start)

    async def _serve(self, route: _Route, scope: Scope, receive: Receive, send: Send) -> int:
        if scope["method"] != "POST":
            err = ApiError(
                405, "MethodNotAllowed", f"{scope['method']} is not supported; webhooks take POST"
            )
            return await _status(send, err, [(b"allow", b"POST")])
        content_type, length = b"", -1
        for name, value in scope["headers"]:
            if name == b"content-type":
                content_type = value
            elif name == b"content-length":
                try:
                    length = int(value)
                except ValueError:
                    length = -1
        if content_type != b"application/json" and (  # what kube-apiserver sends
            content_type.split(b";", 1)[0].strip().lower() != b"application/json"
        ):
            err = ApiError.unsupported_media_type(
                f"content type {content_type.decode('latin-1')!r} is not supported; "
                "webhooks take application/json"
            )
            return await _status(send, err)
        if length > route.max_body:
            return await _status(send, _too_large(route.max_body))
        message = await receive()
        if message["type"] == "http.request" and not message.get("more_body", False):
            # the whole body in one message (what uvicorn delivers for small bodies)
            whole: bytes = message.get("body", b"")
            if len(whole) > route.max_body:
                return await _status(send, _too_large(route.max_body))
            body: bytes | None = whole
        else:
            try:
                body = await _read_body(receive, route.max_body, message)
            except _TooLarge:
                return await _status(send, _too_large(route.max_body))
        if body is None:  # the client went away
            return 499
        try:
            admission = route.admission
            if admission is not None:
                # what AdmissionEndpoint.review does, without its coroutine around
                # decide, and the answer written by admission_json (the same bytes)
                api_version, req = parse_admission_review(decode_body(body))
                verdict, patch = await admission.decide(req)
                payload = admission_json(api_version, req.uid, verdict, patch)
            else:
                payload = orjson.dumps(await route.endpoint.review(decode_body(body)))
        except (BodyError, ReviewError) as exc:
            return await _status(send, ApiError.bad_request(str(exc)))
        except Exception as exc:  # never a traceback to the client
            log.exception("webhook %s failed", scope["path"])
            return await _status(send, ApiError.internal(f"{type(exc).__name__}: {exc}"))
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": _answer_headers(len(payload)),
            }
        )
        await send({"type": "http.response.body", "body": payload})
        return 200


def _too_large(limit: int) -> ApiError:
    return ApiError.too_large(
        f"the request body is larger than this webhook's limit of {limit} bytes"
    )


async def _read_body(
    receive: Receive, limit: int, message: dict[str, Any] | None = None
) -> bytes | None:
    """The whole body, at most ``limit`` bytes (``_TooLarge`` beyond); None on disconnect.

    ``message`` is the first message when the caller has already received it."""
    if message is None:
        message = await receive()
    if message["type"] == "http.disconnect":
        return None
    body: bytes = message.get("body", b"")
    if not message.get("more_body", False):
        if len(body) > limit:
            raise _TooLarge
        return body
    chunks = [body]
    size = len(body)
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise _TooLarge
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


async def _status(send: Send, err: ApiError, extra: list[tuple[bytes, bytes]] | None = None) -> int:
    payload = orjson.dumps(err.to_status())
    headers = [*_JSON_HEADERS, (b"content-length", str(len(payload)).encode())]
    if extra:
        headers.extend(extra)
    await send({"type": "http.response.start", "status": err.code, "headers": headers})
    await send({"type": "http.response.body", "body": payload})
    return err.code


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
