"""Prometheus metrics with controller-runtime's names, labels and buckets.

Each :class:`Metrics` owns a ``CollectorRegistry`` (a manager serves its own on
``/metrics``), so two managers in one process never collide. Families:

- ``controller_runtime_reconcile_total{controller,result}`` (result: success, error,
  requeue, requeue_after), ``controller_runtime_reconcile_errors_total{controller}``,
  ``controller_runtime_terminal_reconcile_errors_total{controller}``,
  ``controller_runtime_reconcile_panics_total{controller}``,
  ``controller_runtime_reconcile_time_seconds{controller}`` (controller-runtime's buckets),
  ``controller_runtime_max_concurrent_reconciles{controller}``,
  ``controller_runtime_active_workers{controller}``;
- ``workqueue_depth{name,controller,priority}``, ``workqueue_adds_total{name,controller}``,
  ``workqueue_queue_duration_seconds``, ``workqueue_work_duration_seconds`` (buckets 10 ns
  times 10^n, 12 of them), ``workqueue_unfinished_work_seconds``,
  ``workqueue_longest_running_processor_seconds``, ``workqueue_retries_total``
  (all ``{name,controller}``, both set to the controller name, as controller-runtime does);
- ``leader_election_master_status{name}`` (1 while leading);
- the process collector (``process_resident_memory_bytes`` …).

The counters and histograms that change on every reconcile are :class:`LoopCounter` and
:class:`LoopHistogram`: prometheus-client's own ``Counter`` and ``Histogram`` (same
registry, names, labels, buckets and exposition, ``_created`` series included), whose
children keep their value in a plain float instead of a lock-guarded value object, so
an increment is one addition. They are meant to be written from one thread (the
manager's event loop); scraping from another thread is safe.
"""

from __future__ import annotations

import time
from bisect import bisect_left
from collections.abc import Iterable
from typing import TYPE_CHECKING

import prometheus_client.metrics as _prometheus_metrics
from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.samples import Sample
from prometheus_client.utils import floatToGoString

if TYPE_CHECKING:
    from kubewerk.runtime.queue import WorkQueue

RECONCILE_BUCKETS = (
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.15,
    0.2,
    0.25,
    0.3,
    0.35,
    0.4,
    0.45,
    0.5,
    0.6,
    0.7,
    0.8,
    0.9,
    1.0,
    1.25,
    1.5,
    1.75,
    2.0,
    2.5,
    3.0,
    3.5,
    4.0,
    4.5,
    5,
    6,
    7,
    8,
    9,
    10,
    15,
    20,
    25,
    30,
    40,
    50,
    60,
)
WORKQUEUE_BUCKETS = tuple(10e-9 * 10**i for i in range(12))

RESULT_SUCCESS = "success"
RESULT_ERROR = "error"
RESULT_REQUEUE = "requeue"
RESULT_REQUEUE_AFTER = "requeue_after"


def _use_created() -> bool:
    """Whether ``_created`` series are exposed (prometheus-client's switch:
    ``PROMETHEUS_DISABLE_CREATED_SERIES`` / ``disable_created_metrics()``)."""
    return bool(getattr(_prometheus_metrics, "_use_created", True))


class LoopCounter(Counter):
    """A prometheus-client ``Counter`` whose children add to a plain float.

    Same family, samples (``_total``, ``_created``) and exposition as ``Counter``;
    ``inc`` rejects negative amounts and label-less use of a labelled family as
    ``Counter`` does, without a lock: write from one thread (the event loop).
    Exemplars are not supported.
    """

    def _metric_init(self) -> None:
        self._count = 0.0
        self._created = time.time()

    def inc(self, amount: float = 1, exemplar: dict[str, str] | None = None) -> None:
        """Add ``amount`` (>= 0)."""
        if amount < 0:
            raise ValueError("Counters can only be incremented by non-negative amounts.")
        if exemplar:
            raise ValueError("exemplars are not supported by kubewerk's runtime counters")
        try:
            self._count += amount
        except AttributeError:  # a labelled family's parent, as Counter refuses it
            raise ValueError(f"{self._type} metric is missing label values") from None

    def reset(self) -> None:
        """Back to zero, with a new ``_created`` time."""
        self._count = 0.0
        self._created = time.time()

    def _child_samples(self) -> Iterable[Sample]:
        total = Sample("_total", {}, self._count, None, None)
        if _use_created():
            return (total, Sample("_created", {}, self._created, None, None))
        return (total,)


class LoopHistogram(Histogram):
    """A prometheus-client ``Histogram`` whose children count in plain floats.

    Same family, buckets, samples (``_bucket`` cumulative, ``_count``, ``_sum``,
    ``_created``) and exposition as ``Histogram``: an observation lands in the first
    bucket whose upper bound is >= the amount (found by bisection), without a lock:
    write from one thread (the event loop). Exemplars are not supported.
    """

    def _metric_init(self) -> None:
        self._counts = [0.0] * len(self._upper_bounds)
        self._total = 0.0
        self._created = time.time()
        self._bounds = tuple(self._upper_bounds)
        self._les = tuple(floatToGoString(b) for b in self._bounds)  # type: ignore[no-untyped-call]

    def observe(self, amount: float, exemplar: dict[str, str] | None = None) -> None:
        """Record one observation."""
        if exemplar:
            raise ValueError("exemplars are not supported by kubewerk's runtime histograms")
        try:
            bounds = self._bounds
        except AttributeError:  # a labelled family's parent, as Histogram refuses it
            raise ValueError(f"{self._type} metric is missing label values") from None
        self._total += amount
        i = bisect_left(bounds, amount)
        if i < len(bounds) and amount <= bounds[i]:  # NaN lands in no bucket, as in Histogram
            self._counts[i] += 1.0

    def _child_samples(self) -> Iterable[Sample]:
        samples = []
        acc = 0.0
        for count, le in zip(self._counts, self._les, strict=True):
            acc += count
            samples.append(Sample("_bucket", {"le": le}, acc, None, None))
        samples.append(Sample("_count", {}, acc, None, None))
        if self._upper_bounds[0] >= 0:
            samples.append(Sample("_sum", {}, self._total, None, None))
        if _use_created():
            samples.append(Sample("_created", {}, self._created, None, None))
        return tuple(samples)


class Metrics:
    """All runtime metric families on one registry."""

    def __init__(self, registry: CollectorRegistry | None = None, process: bool = True) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        if process:
            ProcessCollector(registry=r)
        self.reconcile_total = LoopCounter(
            "controller_runtime_reconcile_total",
            "Total number of reconciliations per controller",
            ["controller", "result"],
            registry=r,
        )
        self.reconcile_errors = LoopCounter(
            "controller_runtime_reconcile_errors_total",
            "Total number of reconciliation errors per controller",
            ["controller"],
            registry=r,
        )
        self.terminal_errors = LoopCounter(
            "controller_runtime_terminal_reconcile_errors_total",
            "Total number of terminal reconciliation errors per controller",
            ["controller"],
            registry=r,
        )
        self.reconcile_panics = LoopCounter(
            "controller_runtime_reconcile_panics_total",
            "Total number of reconciliation panics per controller",
            ["controller"],
            registry=r,
        )
        self.reconcile_time = LoopHistogram(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            ["controller"],
            buckets=RECONCILE_BUCKETS,
            registry=r,
        )
        self.max_concurrent = Gauge(
            "controller_runtime_max_concurrent_reconciles",
            "Maximum number of concurrent reconciles per controller",
            ["controller"],
            registry=r,
        )
        self.active_workers = Gauge(
            "controller_runtime_active_workers",
            "Number of currently used workers per controller",
            ["controller"],
            registry=r,
        )
        self.wq_depth = Gauge(
            "workqueue_depth",
            "Current depth of workqueue by workqueue and priority",
            ["name", "controller", "priority"],
            registry=r,
        )
        self.wq_adds = LoopCounter(
            "workqueue_adds",  # the client appends _total
            "Total number of adds handled by workqueue",
            ["name", "controller"],
            registry=r,
        )
        self.wq_latency = LoopHistogram(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            ["name", "controller"],
            buckets=WORKQUEUE_BUCKETS,
            registry=r,
        )
        self.wq_work = LoopHistogram(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes.",
            ["name", "controller"],
            buckets=WORKQUEUE_BUCKETS,
            registry=r,
        )
        self.wq_unfinished = Gauge(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has been done that is in progress and hasn't been "
            "observed by work_duration. Large values indicate stuck threads. One can deduce "
            "the number of stuck threads by observing the rate at which this increases.",
            ["name", "controller"],
            registry=r,
        )
        self.wq_longest = Gauge(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running.",
            ["name", "controller"],
            registry=r,
        )
        self.wq_retries = LoopCounter(
            "workqueue_retries",
            "Total number of retries handled by workqueue",
            ["name", "controller"],
            registry=r,
        )
        self.leader_status = Gauge(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates "
            "backup, 1 indicates master. 'name' is the string used to identify the lease. "
            "Please make sure to group by name.",
            ["name"],
            registry=r,
        )

    def queue_metrics(self, name: str) -> WorkQueueMetrics:
        """Hooks for a work queue named ``name`` (the controller's name)."""
        return WorkQueueMetrics(self, name)

    def watch_queue(self, queue: WorkQueue[object]) -> None:
        """Compute the queue's depth, active-worker, unfinished and longest-running gauges
        at scrape time (read from the queue then, instead of set on every add, get and done).

        ``controller_runtime_active_workers`` is the number of items being processed: a
        controller's worker holds exactly one item from ``get`` until ``done``.
        """
        name = queue.name
        self.wq_depth.labels(name, name, "").set_function(queue.__len__)
        self.active_workers.labels(name).set_function(queue.in_flight)
        self.wq_unfinished.labels(name, name).set_function(queue.unfinished_work_seconds)
        self.wq_longest.labels(name, name).set_function(queue.longest_running_processor_seconds)

    def exposition(self) -> bytes:
        """The text exposition format of every family."""
        return generate_latest(self.registry)


class WorkQueueMetrics:
    """The :class:`~kubewerk.runtime.queue.QueueMetrics` hooks bound to one queue name.

    ``workqueue_depth`` is not set here: :meth:`Metrics.watch_queue` reads the queue's
    length at scrape time (the depth passed to the hooks is that same length).
    """

    def __init__(self, metrics: Metrics, name: str) -> None:
        self._adds = metrics.wq_adds.labels(name, name)
        self._latency = metrics.wq_latency.labels(name, name)
        self._work = metrics.wq_work.labels(name, name)
        self._retries = metrics.wq_retries.labels(name, name)

    def add(self, depth: int) -> None:
        self._adds.inc()

    def get(self, depth: int, waited: float) -> None:
        self._latency.observe(waited)

    def done(self, depth: int, worked: float) -> None:
        self._work.observe(worked)

    def retry(self) -> None:
        self._retries.inc()
