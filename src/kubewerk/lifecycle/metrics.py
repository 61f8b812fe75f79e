"""The lifecycle kernel's metrics, in a manager's registry beside controller-runtime's.

- ``kubewerk_phase_transitions_total{kind,from,to}``: transitions written (counted after
  the status write succeeded);
- ``kubewerk_objects{kind,phase}``: objects per phase, computed from the informer cache
  when scraped (an object without ``status.phase`` counts in its initial phase; one
  whose phase the lifecycle does not declare, under that phase's text);
- ``kubewerk_phase_duration_seconds{kind,phase}``: how long objects stayed in a phase,
  observed when they leave it (from ``status.lastTransitionTime``, or
  ``metadata.creationTimestamp`` for the initial phase).

``kind`` is ``Kind.group`` (``Database.example.com``), as the bus's events name kinds.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from kubewerk.runtime.metrics import LoopCounter, LoopHistogram

__all__ = ["PHASE_DURATION_BUCKETS", "LifecycleMetrics", "PhaseCounts", "lifecycle_metrics"]

PHASE_DURATION_BUCKETS = (
    0.01,
    0.05,
    0.1,
    0.5,
    1.0,
    5.0,
    10.0,
    30.0,
    60.0,
    300.0,
    900.0,
    3600.0,
    6 * 3600.0,
    24 * 3600.0,
    7 * 24 * 3600.0,
)
"""From 10 ms (a simulated step) to a week (an object that stayed Active)."""

PhaseCounts = Callable[[], dict[str, int]]
"""Counts of one kind's cached objects by phase, computed when called."""


class _ObjectsCollector(Collector):
    """``kubewerk_objects``: asks each kind's counter at scrape time."""

    def __init__(self) -> None:
        self.kinds: dict[str, PhaseCounts] = {}

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily(
            "kubewerk_objects",
            "Number of objects per kind and lifecycle phase, from the informer cache",
            labels=["kind", "phase"],
        )
        for kind, counts in sorted(self.kinds.items()):
            for phase, count in sorted(counts().items()):
                family.add_metric([kind, phase], count)
        yield family

    def describe(self) -> Iterator[GaugeMetricFamily]:
        yield GaugeMetricFamily(
            "kubewerk_objects",
            "Number of objects per kind and lifecycle phase, from the informer cache",
            labels=["kind", "phase"],
        )


class LifecycleMetrics:
    """The lifecycle families, registered once on one registry (a manager's)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        self.transitions = LoopCounter(
            "kubewerk_phase_transitions",  # the client appends _total
            "Number of lifecycle phase transitions written, per kind, from and to phase",
            ["kind", "from", "to"],
            registry=registry,
        )
        self.phase_duration = LoopHistogram(
            "kubewerk_phase_duration_seconds",
            "Time objects spent in a lifecycle phase, observed when they leave it",
            ["kind", "phase"],
            buckets=PHASE_DURATION_BUCKETS,
            registry=registry,
        )
        self._objects = _ObjectsCollector()
        registry.register(self._objects)

    def count_objects(self, kind: str, counts: PhaseCounts) -> None:
        """Report ``kubewerk_objects{kind=...}`` from ``counts()`` at every scrape."""
        self._objects.kinds[kind] = counts

    def transitioned(self, kind: str, source: str, target: str, seconds: float | None) -> None:
        """Count one written transition and observe the time spent in ``source``."""
        self.transitions.labels(kind, source, target).inc()
        if seconds is not None and seconds >= 0:
            self.phase_duration.labels(kind, source).observe(seconds)


_BY_REGISTRY: weakref.WeakKeyDictionary[CollectorRegistry, LifecycleMetrics] = (
    weakref.WeakKeyDictionary()
)


def lifecycle_metrics(registry: CollectorRegistry) -> LifecycleMetrics:
    """The :class:`LifecycleMetrics` of ``registry``, created on first use (two platforms
    sharing a manager share its families)."""
    found = _BY_REGISTRY.get(registry)
    if found is None:
        found = _BY_REGISTRY[registry] = LifecycleMetrics(registry)
    return found
