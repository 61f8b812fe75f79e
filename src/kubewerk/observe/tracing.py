"""OpenTelemetry tracing of an operator: a span per reconcile, a child span per API
request it makes, and the W3C ``traceparent`` sent to the API server.

Needs the optional extra ``kubewerk[otel]`` (``opentelemetry-api`` and
``opentelemetry-sdk``). Call :func:`instrument` once, before the manager starts, after
setting up a tracer provider (or pass one)::

    from opentelemetry.sdk.trace import TracerProvider
    from kubewerk.observe import tracing

    tracing.instrument(TracerProvider(...))   # False (and a warning) without the extra

What it guarantees:

- **one span per reconcile**, named ``reconcile <controller>`` (kind INTERNAL), current
  while the reconcile function runs, with the attributes ``kubewerk.controller``,
  ``kubewerk.kind`` (``Kind.group``, ``Kind`` for the core group), ``kubewerk.key``
  (``namespace/name``), ``k8s.namespace.name`` (for a namespaced object),
  ``kubewerk.generation`` (``metadata.generation`` of the object reconciled),
  ``kubewerk.result`` (``success``, ``error``, ``requeue``, ``requeue_after``, as
  ``controller_runtime_reconcile_total`` counts it; ``cancelled`` when the manager stopped
  it) and ``kubewerk.requests`` (how many API requests it made). An error (a raised
  exception, a timeout, a terminal error) sets the span's status to ERROR with the
  exception recorded; a 409 Conflict (retried, not an error) adds an event ``conflict``;
- **a child span per API request** made while a span is current (a reconcile's, or any
  the user started), named ``<METHOD> <path template>`` (``PATCH
  /apis/g/v1/namespaces/{namespace}/widgets/{name}/status``, kind CLIENT), with
  ``http.request.method``, ``url.path``, ``http.response.status_code`` and, for an
  answer of 400 or more or no answer, ``error.type`` and status ERROR (as OpenTelemetry's
  HTTP client conventions say). Requests with no current span (informers' lists,
  background Event writes) make no span unless ``all_requests=True``;
- **propagation**: every request made inside a span carries the headers of the
  configured propagator (by default W3C ``traceparent``, with the request's span as
  parent), on every retry; the embedded API server's audit log records the trace id
  of each custom-resource write as ``kubewerk.dev/trace-id`` (``apiserver.audit``), so
  ``kubewerk audit history`` links a change to the reconcile that made it. Watches are
  not traced (they outlive any reconcile);
- **no cost when not used**: importing this module imports no OpenTelemetry package;
  without :func:`instrument` the runtime and the client pay one comparison per reconcile
  and per request (:func:`kubewerk.runtime.controller.set_reconcile_hook`,
  :func:`kubewerk.client.client.set_request_hook`). Without the extra installed
  :func:`instrument` changes nothing and returns False.
"""

from __future__ import annotations

import contextvars
import importlib.util
import logging
from typing import Any, Final

from kubewerk import __version__
from kubewerk.client import client as _client
from kubewerk.runtime import controller as _controller
from kubewerk.runtime.metrics import RESULT_REQUEUE

__all__ = [
    "INSTRUMENTATION_NAME",
    "available",
    "instrument",
    "instrumented",
    "path_template",
    "uninstrument",
]

log = logging.getLogger("kubewerk.observe.tracing")

INSTRUMENTATION_NAME: Final = "kubewerk"
"""The instrumentation scope of every span this module makes."""

RESULT_CANCELLED: Final = "cancelled"

# the reconcile being traced in this task (for counting its requests)
_current: contextvars.ContextVar[_ReconcileSpan | None] = contextvars.ContextVar(
    "kubewerk_reconcile_span", default=None
)
_installed: _Hooks | None = None


def available() -> bool:
    """Whether the OpenTelemetry API and SDK can be imported (the ``otel`` extra)."""
    return all(
        importlib.util.find_spec(name) is not None
        for name in ("opentelemetry.trace", "opentelemetry.sdk")
    )


def instrumented() -> bool:
    """Whether :func:`instrument` installed the hooks (and they are still in place)."""
    return _installed is not None


def path_template(path: str) -> str:
    """An API path with its namespace and object name replaced by ``{namespace}`` and
    ``{name}`` (a span name of bounded cardinality); other paths as they are, without
    their query."""
    path = path.partition("?")[0]
    parts = path.strip("/").split("/")
    if parts[0] == "api" and len(parts) >= 2:
        head, rest = parts[:2], parts[2:]
    elif parts[0] == "apis" and len(parts) >= 3:
        head, rest = parts[:3], parts[3:]
    else:
        return path
    if rest[:1] == ["namespaces"]:
        if len(rest) == 2:  # a Namespace itself
            return "/" + "/".join([*head, "namespaces", "{name}"])
        if len(rest) > 2:
            head = [*head, "namespaces", "{namespace}"]
            rest = rest[2:]
    out = head + rest[:1]
    if len(rest) >= 2:
        out.append("{name}")
        out.extend(rest[2:])
    return "/" + "/".join(out)


def _kind_label(group: str, kind: str) -> str:
    return f"{kind}.{group}" if group else kind


class _ReconcileSpan:
    """One reconcile's span (a :class:`kubewerk.runtime.controller.ReconcileTrace`)."""

    __slots__ = ("_hooks", "_result", "_span", "_token", "_var_token", "requests")

    def __init__(self, hooks: _Hooks, controller: Any, key: str) -> None:
        self._hooks = hooks
        rt = controller.rt
        namespace = key.rpartition("/")[0]
        attributes: dict[str, Any] = {
            "kubewerk.controller": controller.name,
            "kubewerk.kind": _kind_label(rt.group, rt.kind),
            "kubewerk.key": key,
        }
        if namespace:
            attributes["k8s.namespace.name"] = namespace
        self._span = hooks.tracer.start_span(
            f"reconcile {controller.name}", kind=hooks.internal, attributes=attributes
        )
        self._token: Any = None
        self._var_token: contextvars.Token[_ReconcileSpan | None] | None = None
        self._result: str | None = None
        self.requests = 0

    def __enter__(self) -> _ReconcileSpan:
        hooks = self._hooks
        self._token = hooks.attach(hooks.set_span_in_context(self._span))
        self._var_token = _current.set(self)
        return self

    def given(self, obj: Any) -> None:
        if isinstance(obj, dict):
            generation = (obj.get("metadata") or {}).get("generation")
        else:
            generation = getattr(getattr(obj, "metadata", None), "generation", None)
        if isinstance(generation, int):
            self._span.set_attribute("kubewerk.generation", generation)

    def result(self, result: str, error: BaseException | None) -> None:
        self._result = result
        span = self._span
        span.set_attribute("kubewerk.result", result)
        if error is None:
            return
        if result == RESULT_REQUEUE:  # a conflict: retried, not an error
            span.add_event("conflict", {"exception.message": str(error)})
            return
        span.record_exception(error)
        span.set_status(self._hooks.status_error(f"{type(error).__name__}: {error}"))

    def __exit__(self, exc_type: Any, exc: Any, tb: Any, /) -> None:
        span = self._span
        try:
            if self._result is None:
                span.set_attribute("kubewerk.result", RESULT_CANCELLED)
                if isinstance(exc, BaseException):
                    span.set_status(self._hooks.status_error(type(exc).__name__))
            span.set_attribute("kubewerk.requests", self.requests)
            span.end()
        finally:
            if self._var_token is not None:
                _current.reset(self._var_token)
            self._hooks.detach(self._token)


class _RequestSpan:
    """One API request's span (a :class:`kubewerk.client.client.RequestTrace`)."""

    __slots__ = ("_hooks", "_span", "headers")

    def __init__(self, hooks: _Hooks, span: Any, headers: str) -> None:
        self._hooks = hooks
        self._span = span
        self.headers = headers

    def end(self, status: int, error: BaseException | None) -> None:
        span = self._span
        if status:
            span.set_attribute("http.response.status_code", status)
        if status >= 400 or error is not None:
            span.set_attribute("error.type", str(status) if status >= 400 else type(error).__name__)
            span.set_status(self._hooks.status_error(str(error) if error is not None else ""))
        span.end()


class _Hooks:
    """The tracer and the OpenTelemetry functions the hooks call (imported once, by
    :func:`instrument`)."""

    def __init__(self, tracer_provider: Any, all_requests: bool) -> None:
        from opentelemetry import context, propagate, trace
        from opentelemetry.trace import SpanKind, Status, StatusCode

        self.tracer = trace.get_tracer(
            INSTRUMENTATION_NAME, __version__, tracer_provider=tracer_provider
        )
        self.internal = SpanKind.INTERNAL
        self.client_kind = SpanKind.CLIENT
        self.attach = context.attach
        self.detach = context.detach
        self.set_span_in_context = trace.set_span_in_context
        self.get_current_span = trace.get_current_span
        self.inject = propagate.inject
        self._status = Status
        self._error = StatusCode.ERROR
        self.all_requests = all_requests

    def status_error(self, description: str) -> Any:
        return self._status(self._error, description or None)

    def reconcile(self, controller: Any, key: str) -> _controller.ReconcileTrace | None:
        return _ReconcileSpan(self, controller, key)

    def request(self, method: str, path: str) -> _client.RequestTrace | None:
        parent = self.get_current_span()
        if not self.all_requests and not parent.get_span_context().is_valid:
            return None
        span = self.tracer.start_span(
            f"{method} {path_template(path)}",
            kind=self.client_kind,
            attributes={"http.request.method": method, "url.path": path.partition("?")[0]},
        )
        carrier: dict[str, str] = {}
        self.inject(carrier, context=self.set_span_in_context(span))
        headers = "".join(
            f"{name}: {value}\r\n"
            for name, value in carrier.items()
            if not any(c in name or c in value for c in "\r\n")
        )
        reconcile = _current.get()
        if reconcile is not None:
            reconcile.requests += 1
        return _RequestSpan(self, span, headers)


_warned = False


def instrument(tracer_provider: Any = None, *, all_requests: bool = False) -> bool:
    """Trace every controller and client of this process (see the module doc) through
    ``tracer_provider`` (default: OpenTelemetry's global one). ``all_requests`` also
    traces requests made outside any span (informers' lists, Event writes), each as a
    root span. Calling it again replaces the previous setup.

    Returns True when the hooks are installed; False, with one warning, when the
    OpenTelemetry packages are not installed (``pip install 'kubewerk[otel]'``): then
    nothing changes and nothing is traced."""
    global _installed, _warned
    try:
        hooks = _Hooks(tracer_provider, all_requests)
    except ImportError as exc:
        if not _warned:
            _warned = True
            log.warning(
                "tracing is off: OpenTelemetry is not installed (%s); "
                "install it with: pip install 'kubewerk[otel]'",
                exc,
            )
        return False
    _installed = hooks
    _controller.set_reconcile_hook(hooks.reconcile)
    _client.set_request_hook(hooks.request)
    return True


def uninstrument() -> None:
    """Remove the hooks :func:`instrument` installed (hooks someone else installed
    since are left alone)."""
    global _installed
    hooks, _installed = _installed, None
    if hooks is None:
        return
    previous = _controller.set_reconcile_hook(None)
    if getattr(previous, "__self__", None) is not hooks:
        _controller.set_reconcile_hook(previous)
    previous_request = _client.set_request_hook(None)
    if getattr(previous_request, "__self__", None) is not hooks:
        _client.set_request_hook(previous_request)
