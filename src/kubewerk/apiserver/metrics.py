"""The embedded server's ``/metrics``: kube-apiserver's metric names, labels and buckets.

Families (Prometheus text format, served at ``GET /metrics``):

- ``apiserver_request_total{verb,dry_run,group,version,resource,subresource,scope,component,code}``
  and ``apiserver_request_duration_seconds{...}`` (the same labels but ``code``) with
  kube-apiserver's buckets. ``verb`` is kube's: GET, LIST, WATCH, POST, PUT, PATCH, APPLY,
  DELETE, DELETECOLLECTION; ``scope`` is resource, namespace or cluster; ``component`` is
  ``apiserver``. Requests outside the resource API (discovery, OpenAPI, probes,
  ``/metrics``) are counted with the HTTP method as verb and empty resource labels. A
  watch is counted when its stream ends, with the stream's whole duration.
- ``apiserver_current_inflight_requests{request_kind}`` (``readOnly``/``mutating``,
  watches excluded) and ``apiserver_longrunning_requests{...}`` (open watches).
- ``apiserver_terminated_watchers_total{group,resource}``: watchers closed because their
  client did not keep up (the backlog bound).
- ``apiserver_storage_objects{resource}`` (``resource.group``, as kube-apiserver 1.33
  names it) and ``apiserver_resource_objects{group,resource}``, counted at scrape time.
- kubewerk's own, where kube-apiserver has no equivalent: ``kubewerk_storage_revision``,
  ``kubewerk_storage_object_bytes``, ``kubewerk_storage_history_events``,
  ``kubewerk_storage_history_bytes``, ``kubewerk_storage_compactions_total``,
  ``kubewerk_storage_compacted_events_total``, ``kubewerk_watch_queued_events``,
  ``kubewerk_watch_queued_bytes``, ``kubewerk_watch_encoded_cache_bytes``.
- admission (``AdmissionMetrics``, recorded by the admission chain), kube-apiserver's
  names, labels and buckets: ``apiserver_admission_webhook_admission_duration_seconds
  {name,type,operation,rejected}``, ``apiserver_admission_webhook_request_total
  {name,type,operation,code,rejected}``, ``apiserver_admission_webhook_rejection_count
  {name,type,operation,error_type,rejection_code}``,
  ``apiserver_admission_webhook_fail_open_count{name,type}`` (``type`` is ``admit`` for
  mutating webhooks, ``validating`` for validating ones), and
  ``apiserver_validating_admission_policy_check_total`` / ``_check_duration_seconds``
  ``{policy,policy_binding,error_type,enforcement_action}``.
- the process collector (``process_resident_memory_bytes``, open descriptors, ...).

Recording a request is a dictionary update and a bucket search on the event loop (well
under a microsecond); everything else is computed when ``/metrics`` is read.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, ProcessCollector, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

if TYPE_CHECKING:
    from kubewerk.apiserver.registry import Registry
    from kubewerk.apiserver.storage.base import Store
    from kubewerk.apiserver.watch import WatchHub

# kube-apiserver's apiserver_request_duration_seconds buckets
REQUEST_BUCKETS = (
    0.005,
    0.025,
    0.05,
    0.1,
    0.2,
    0.4,
    0.6,
    0.8,
    1.0,
    1.25,
    1.5,
    2,
    3,
    4,
    5,
    6,
    8,
    10,
    15,
    20,
    30,
    45,
    60,
)
REQUEST_LABELS = (
    "verb",
    "dry_run",
    "group",
    "version",
    "resource",
    "subresource",
    "scope",
    "component",
)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

# verb, dry_run, group, version, resource, subresource, scope, component
RequestLabels = tuple[str, str, str, str, str, str, str, str]


def non_resource_labels(method: str) -> RequestLabels:
    """Labels of a request outside the resource API (discovery, OpenAPI, probes)."""
    return (method, "", "", "", "", "", "", "apiserver")


WEBHOOK_BUCKETS = (0.005, 0.025, 0.1, 0.5, 1.0, 2.5, 10, 25)
"""kube-apiserver's ``apiserver_admission_webhook_admission_duration_seconds`` buckets."""
POLICY_BUCKETS = (0.0000005, 0.001, 0.01, 0.1, 1.0)
"""kube-apiserver's ``apiserver_validating_admission_policy_check_duration_seconds`` buckets."""


class _Histograms:
    """Bucket counts and sums per label tuple (the last bucket is +Inf)."""

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.data: dict[tuple[str, ...], tuple[list[int], list[float]]] = {}

    def observe(self, labels: tuple[str, ...], seconds: float) -> None:
        entry = self.data.get(labels)
        if entry is None:
            entry = self.data[labels] = ([0] * (len(self.bounds) + 1), [0.0])
        entry[0][bisect_left(self.bounds, seconds)] += 1
        entry[1][0] += seconds

    def family(
        self, name: str, documentation: str, labels: tuple[str, ...]
    ) -> HistogramMetricFamily:
        family = HistogramMetricFamily(name, documentation, labels=labels)
        for key, (counts, total) in list(self.data.items()):
            cumulative, buckets = 0, []
            for bound, count in zip((*self.bounds, float("inf")), counts, strict=True):
                cumulative += count
                buckets.append((floatToGoString(bound), cumulative))  # type: ignore[no-untyped-call]
            family.add_metric(key, buckets, total[0])
        return family


def _counter(name: str, documentation: str, labels: tuple[str, ...], data: dict[Any, int]) -> Any:
    family = CounterMetricFamily(name, documentation, labels=labels)
    for key, count in list(data.items()):
        family.add_metric(key, count)
    return family


class AdmissionMetrics:
    """What the admission chain records, as kube-apiserver's admission metrics.

    Recording is a dictionary update on the event loop; families are built at scrape.
    """

    def __init__(self) -> None:
        self.webhook_durations = _Histograms(WEBHOOK_BUCKETS)
        self.webhook_requests: dict[tuple[str, str, str, str, str], int] = {}
        self.webhook_rejections: dict[tuple[str, str, str, str, str], int] = {}
        self.webhook_fail_open: dict[tuple[str, str], int] = {}
        self.policy_checks: dict[tuple[str, str, str, str], int] = {}
        self.policy_durations = _Histograms(POLICY_BUCKETS)

    def webhook(
        self, name: str, step: str, operation: str, seconds: float, code: int, rejected: bool
    ) -> None:
        """``ObserveWebhook``: one call of webhook ``name`` (``step`` ``admit`` or
        ``validating``) answered with ``code`` (200 allowed, the denial's code, the
        calling error's status code; above 600 counted as 600)."""
        flag = "true" if rejected else "false"
        key = (name, step, operation, str(min(code, 600)), flag)
        self.webhook_requests[key] = self.webhook_requests.get(key, 0) + 1
        self.webhook_durations.observe((name, step, operation, flag), seconds)

    def webhook_rejection(
        self, name: str, step: str, operation: str, error_type: str, code: int
    ) -> None:
        """``ObserveWebhookRejection``: ``error_type`` is ``calling_webhook_error``,
        ``apiserver_internal_error`` or ``no_error`` (the webhook denied)."""
        key = (name, step, operation, error_type, str(min(code, 600)))
        self.webhook_rejections[key] = self.webhook_rejections.get(key, 0) + 1

    def fail_open(self, name: str, step: str) -> None:
        """``ObserveWebhookFailOpen``: a failed call ignored by ``failurePolicy: Ignore``."""
        key = (name, step)
        self.webhook_fail_open[key] = self.webhook_fail_open.get(key, 0) + 1

    def policy_check(
        self, policy: str, binding: str, error_type: str, action: str, seconds: float
    ) -> None:
        """One policy decision counted as kube's dispatcher counts it: ``action`` ``allow``
        (an expression error under Ignore), ``deny``, ``warn`` or ``audit``."""
        key = (policy, binding, error_type, action)
        self.policy_checks[key] = self.policy_checks.get(key, 0) + 1
        self.policy_durations.observe(key, seconds)

    def families(self) -> Iterator[Any]:
        """The Prometheus families, as kube-apiserver names and labels them."""
        hook = ("name", "type", "operation")
        yield self.webhook_durations.family(
            "apiserver_admission_webhook_admission_duration_seconds",
            "Admission webhook latency histogram in seconds, identified by name and broken "
            "out for each operation and API resource and type (validate or admit).",
            (*hook, "rejected"),
        )
        yield _counter(
            "apiserver_admission_webhook_request",
            "Admission webhook request total, identified by name and broken out for each "
            "admission type (validating or mutating) and operation.",
            (*hook, "code", "rejected"),
            self.webhook_requests,
        )
        yield _counter(
            "apiserver_admission_webhook_rejection_count",
            "Admission webhook rejection count, identified by name and broken out for each "
            "admission type (validating or admit) and operation.",
            (*hook, "error_type", "rejection_code"),
            self.webhook_rejections,
        )
        yield _counter(
            "apiserver_admission_webhook_fail_open_count",
            "Admission webhook fail open count, identified by name and broken out for each "
            "admission type (validating or mutating).",
            ("name", "type"),
            self.webhook_fail_open,
        )
        policy = ("policy", "policy_binding", "error_type", "enforcement_action")
        yield _counter(
            "apiserver_validating_admission_policy_check",
            "Validation admission policy check total, labeled by policy and further "
            "identified by binding and enforcement action taken.",
            policy,
            self.policy_checks,
        )
        yield self.policy_durations.family(
            "apiserver_validating_admission_policy_check_duration_seconds",
            "Validation admission latency for individual validation expressions in seconds, "
            "labeled by policy and further including binding and enforcement action taken.",
            policy,
        )


class ApiMetrics:
    """Counters of one ``ApiServer``, and its ``/metrics`` exposition.

    Written from the server's event loop only; ``render`` may run on it or elsewhere.
    """

    def __init__(self, store: Store, registry: Registry, hub: WatchHub) -> None:
        self.requests: dict[tuple[RequestLabels, int], int] = {}
        # labels -> bucket counts (len(REQUEST_BUCKETS) + 1, the last is +Inf), then the sum
        self.durations: dict[RequestLabels, tuple[list[int], list[float]]] = {}
        self.inflight = {"readOnly": 0, "mutating": 0}
        self.longrunning: dict[RequestLabels, int] = {}
        self.admission = AdmissionMetrics()
        self._registry = CollectorRegistry(auto_describe=False)
        self._registry.register(_Exposition(self, store, registry, hub))
        ProcessCollector(registry=self._registry)

    def record(self, labels: RequestLabels, code: int, seconds: float) -> None:
        """Count one finished request and its duration."""
        key = (labels, code)
        requests = self.requests
        requests[key] = requests.get(key, 0) + 1
        entry = self.durations.get(labels)
        if entry is None:
            entry = self.durations[labels] = ([0] * (len(REQUEST_BUCKETS) + 1), [0.0])
        entry[0][bisect_left(REQUEST_BUCKETS, seconds)] += 1
        entry[1][0] += seconds

    def render(self) -> bytes:
        """The Prometheus text exposition of every family."""
        return generate_latest(self._registry)


class _Exposition(Collector):
    """Builds the families from the counters and from the store, registry and hub at scrape."""

    def __init__(
        self, metrics: ApiMetrics, store: Store, registry: Registry, hub: WatchHub
    ) -> None:
        self.metrics = metrics
        self.store = store
        self.registry = registry
        self.hub = hub

    def collect(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily | HistogramMetricFamily]:
        yield from self._requests()
        yield from self._watches()
        yield from self._objects()
        yield from self._storage()
        yield from self.metrics.admission.families()

    def _requests(
        self,
    ) -> Iterator[CounterMetricFamily | GaugeMetricFamily | HistogramMetricFamily]:
        m = self.metrics
        total = CounterMetricFamily(
            "apiserver_request_total",
            "Counter of apiserver requests broken out for each verb, dry run value, group, "
            "version, resource, scope, component, and HTTP response code.",
            labels=(*REQUEST_LABELS, "code"),
        )
        for (labels, code), count in list(m.requests.items()):
            total.add_metric((*labels, str(code)), count)
        yield total
        duration = HistogramMetricFamily(
            "apiserver_request_duration_seconds",
            "Response latency distribution in seconds for each verb, dry run value, "
            "group, version, resource, subresource, scope and component.",
            labels=REQUEST_LABELS,
        )
        for labels, (counts, total_seconds) in list(m.durations.items()):
            cumulative, buckets = 0, []
            for bound, count in zip((*REQUEST_BUCKETS, float("inf")), counts, strict=True):
                cumulative += count
                buckets.append((floatToGoString(bound), cumulative))  # type: ignore[no-untyped-call]
            duration.add_metric(labels, buckets, total_seconds[0])
        yield duration
        inflight = GaugeMetricFamily(
            "apiserver_current_inflight_requests",
            "Maximal number of currently used inflight request limit of this apiserver "
            "per request kind in last second.",
            labels=("request_kind",),
        )
        for kind, count in m.inflight.items():
            inflight.add_metric((kind,), count)
        yield inflight
        longrunning = GaugeMetricFamily(
            "apiserver_longrunning_requests",
            "Gauge of all active long-running apiserver requests broken out by verb, "
            "group, version, resource, scope and component.",
            labels=REQUEST_LABELS,
        )
        for labels, count in list(m.longrunning.items()):
            if count:
                longrunning.add_metric(labels, count)
        yield longrunning

    def _watches(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily]:
        stats = self.hub.stats()
        terminated = CounterMetricFamily(
            "apiserver_terminated_watchers_total",
            "Counter of watchers closed due to unresponsiveness broken by resource type.",
            labels=("group", "resource"),
        )
        for (group, resource), count in sorted(stats.terminated.items()):
            terminated.add_metric((group, resource), count)
        yield terminated
        yield _gauge(
            "kubewerk_watch_queued_events",
            "Events queued for watchers, not yet written.",
            stats.queued_events,
        )
        yield _gauge(
            "kubewerk_watch_queued_bytes",
            "Encoded bytes queued for watchers, not yet written.",
            stats.queued_bytes,
        )
        yield _gauge(
            "kubewerk_watch_encoded_cache_bytes",
            "Bytes of watch-event encodings shared between watchers.",
            stats.encoded_cache_bytes,
        )

    def _objects(self) -> Iterator[GaugeMetricFamily]:
        storage_objects = GaugeMetricFamily(
            "apiserver_storage_objects",
            "Number of stored objects at the time of last check split by kind.",
            labels=("resource",),
        )
        resource_objects = GaugeMetricFamily(
            "apiserver_resource_objects",
            "Number of stored objects at the time of last check split by kind.",
            labels=("group", "resource"),
        )
        seen: set[tuple[str, str]] = set()
        for rtype in self.registry.all():
            key = (rtype.group, rtype.resource)
            if key in seen:
                continue
            seen.add(key)
            count = self.store.count(rtype.ns_prefix(None))
            storage_objects.add_metric((rtype.qualified,), count)
            resource_objects.add_metric(key, count)
        yield storage_objects
        yield resource_objects

    def _storage(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily]:
        stats = self.store.stats()
        yield _gauge("kubewerk_storage_revision", "The newest committed revision.", stats.revision)
        yield _gauge(
            "kubewerk_storage_object_bytes",
            "Encoded size of the objects stored now.",
            stats.object_bytes,
        )
        yield _gauge(
            "kubewerk_storage_history_events",
            "Changes the history holds for watches and paginated lists.",
            stats.history_events,
        )
        yield _gauge(
            "kubewerk_storage_history_bytes",
            "Encoded size of the objects the history holds.",
            stats.history_bytes,
        )
        compactions = CounterMetricFamily(
            "kubewerk_storage_compactions",
            "Compactions that dropped history since the store was opened.",
        )
        compactions.add_metric((), stats.compactions)
        yield compactions
        compacted = CounterMetricFamily(
            "kubewerk_storage_compacted_events",
            "Changes dropped from the history by compaction since the store was opened.",
        )
        compacted.add_metric((), stats.compacted_events)
        yield compacted


def _gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, documentation)
    family.add_metric((), value)
    return family


__all__ = [
    "CONTENT_TYPE",
    "REQUEST_BUCKETS",
    "AdmissionMetrics",
    "ApiMetrics",
    "RequestLabels",
    "non_resource_labels",
]
