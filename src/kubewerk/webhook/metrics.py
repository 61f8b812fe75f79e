"""The webhook server's Prometheus metrics, with controller-runtime's names and labels.

- ``controller_runtime_webhook_requests_total{webhook,code}``: requests answered, by the
  webhook's path and the HTTP status code (the series for 200 and 500 exist from the
  start, as controller-runtime initialises them);
- ``controller_runtime_webhook_latency_seconds{webhook}``: time from the request's first
  byte reaching the app to the last byte of the answer, with controller-runtime's
  classic buckets (10 ns times 10^n, 12 of them);
- ``controller_runtime_webhook_requests_in_flight{webhook}``: requests being served.

One :class:`WebhookMetrics` exists per registry (:func:`metrics_for`), so several
webhook servers in one manager share the families instead of colliding.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

__all__ = ["LATENCY_BUCKETS", "PathMetrics", "WebhookMetrics", "metrics_for"]

LATENCY_BUCKETS = tuple(10e-9 * 10**i for i in range(12))


class PathMetrics:
    """The three series of one webhook path."""

    __slots__ = ("_codes", "_path", "_total", "in_flight", "latency")

    def __init__(self, metrics: WebhookMetrics, path: str) -> None:
        self._total = metrics.requests_total
        self._codes: dict[int, Any] = {}
        self.latency = metrics.latency.labels(path)
        self.in_flight = metrics.in_flight.labels(path)
        self._path = path
        for code in (200, 500):
            self.count(code, 0)

    def count(self, code: int, amount: float = 1) -> None:
        """Count one answer with HTTP status ``code``."""
        child = self._codes.get(code)
        if child is None:
            child = self._codes[code] = self._total.labels(self._path, str(code))
        child.inc(amount)


class WebhookMetrics:
    """The webhook families on ``registry``."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        self.requests_total = Counter(
            "controller_runtime_webhook_requests",  # the client appends _total
            "Total number of admission requests by HTTP status code.",
            ["webhook", "code"],
            registry=registry,
        )
        self.latency = Histogram(
            "controller_runtime_webhook_latency_seconds",
            "Histogram of the latency of processing admission requests",
            ["webhook"],
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        self.in_flight = Gauge(
            "controller_runtime_webhook_requests_in_flight",
            "Current number of admission requests being served.",
            ["webhook"],
            registry=registry,
        )

    def path(self, path: str) -> PathMetrics:
        """The series of the webhook at ``path``."""
        return PathMetrics(self, path)


_lock = threading.Lock()
_BY_REGISTRY: weakref.WeakKeyDictionary[CollectorRegistry, WebhookMetrics] = (
    weakref.WeakKeyDictionary()
)


def metrics_for(registry: CollectorRegistry) -> WebhookMetrics:
    """The webhook families on ``registry``, created on first use."""
    with _lock:
        found = _BY_REGISTRY.get(registry)
        if found is None:
            found = _BY_REGISTRY[registry] = WebhookMetrics(registry)
        return found
