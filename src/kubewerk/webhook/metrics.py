"""The webhook server's Prometheus metrics, with controller-runtime's names and labels.

- ``controller_runtime_webhook_requests_total{webhook,code}``: requests answered, by the
  webhook's path and the HTTP status code (the series for 200 and 500 exist from the
  start, as controller-runtime initialises them);
- ``controller_runtime_webhook_latency_seconds{webhook}``: time from the request reaching
  the app to the last byte of the answer handed to the server, with controller-runtime's
  classic buckets (10 ns times 10^n, 12 of them);
- ``controller_runtime_webhook_requests_in_flight{webhook}``: requests being served.

The numbers are plain counters kept by the event loop that serves the requests (an
increment is one addition, no lock) and turned into metric families by a collector
when the registry is scraped, from any thread; the exposition is prometheus-client's,
``_created`` series included. One :class:`WebhookMetrics` exists per registry
(:func:`metrics_for`), so several webhook servers in one manager share the families
instead of colliding.
"""

from __future__ import annotations

import threading
import time
import weakref
from bisect import bisect_left
from collections.abc import Iterator

from prometheus_client import CollectorRegistry
from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.utils import floatToGoString

__all__ = ["LATENCY_BUCKETS", "PathMetrics", "WebhookMetrics", "metrics_for"]

LATENCY_BUCKETS = tuple(10e-9 * 10**i for i in range(12))
_LES = (*(floatToGoString(b) for b in LATENCY_BUCKETS), "+Inf")  # type: ignore[no-untyped-call]


class PathMetrics:
    """The series of one webhook path; written from one thread (the event loop)."""

    __slots__ = ("buckets", "codes", "created", "in_flight", "latency_sum", "path")

    def __init__(self, path: str) -> None:
        self.path = path
        self.codes: dict[int, float] = {200: 0.0, 500: 0.0}
        self.buckets = [0.0] * (len(LATENCY_BUCKETS) + 1)  # the last one: +Inf
        self.latency_sum = 0.0
        self.in_flight = 0
        self.created = time.time()

    def record(self, code: int, seconds: float) -> None:
        """Count one answer with HTTP status ``code`` and its latency, ``seconds``."""
        codes = self.codes
        codes[code] = codes.get(code, 0.0) + 1.0
        self.latency_sum += seconds
        self.buckets[bisect_left(LATENCY_BUCKETS, seconds)] += 1.0


class WebhookMetrics:
    """The webhook families on ``registry`` (see the module doc)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        self._paths: dict[str, PathMetrics] = {}
        registry.register(self)

    def path(self, path: str) -> PathMetrics:
        """The series of the webhook at ``path`` (shared by every app on this registry)."""
        found = self._paths.get(path)
        if found is None:
            found = self._paths[path] = PathMetrics(path)
        return found

    def describe(self) -> list[Metric]:
        return [
            CounterMetricFamily(
                "controller_runtime_webhook_requests",
                "Total number of admission requests by HTTP status code.",
                labels=["webhook", "code"],
            ),
            HistogramMetricFamily(
                "controller_runtime_webhook_latency_seconds",
                "Histogram of the latency of processing admission requests",
                labels=["webhook"],
            ),
            GaugeMetricFamily(
                "controller_runtime_webhook_requests_in_flight",
                "Current number of admission requests being served.",
                labels=["webhook"],
            ),
        ]

    def collect(self) -> Iterator[Metric]:
        total, latency, in_flight = self.describe()
        assert isinstance(total, CounterMetricFamily)
        assert isinstance(latency, HistogramMetricFamily)
        assert isinstance(in_flight, GaugeMetricFamily)
        for path, series in list(self._paths.items()):
            for code, value in sorted(series.codes.items()):
                total.add_metric([path, str(code)], value, created=series.created)
            cumulative, acc = [], 0.0
            for le, count in zip(_LES, series.buckets, strict=True):
                acc += count
                cumulative.append((le, acc))
            latency.add_metric([path], cumulative, series.latency_sum)
            in_flight.add_metric([path], series.in_flight)
        yield total
        yield latency
        yield in_flight


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
