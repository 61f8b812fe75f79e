"""Reconcile rates, error rates, queue depths and latencies from an operator's
``/metrics``, as short time series per controller.

The names read are controller-runtime's (which :mod:`kubewerk.runtime.metrics` also
serves): ``controller_runtime_reconcile_total{controller,result}``,
``controller_runtime_reconcile_errors_total{controller}``,
``controller_runtime_reconcile_time_seconds`` (``_sum``/``_count``) and
``workqueue_depth{name}`` (a controller's queue carries the controller's name).

:func:`parse_exposition` reads one scrape into per-controller totals;
:class:`MetricsSampler` scrapes a source every ``interval`` seconds and keeps the last
:data:`POINTS` points per controller: the rate of reconciles and of errors per second
and the mean reconcile latency between two scrapes (``None`` when nothing ran), and
the queue depth at the scrape. A counter that went down (the operator restarted) starts
a new baseline instead of giving a negative rate. A failed scrape is reported as
:attr:`MetricsSampler.error` and leaves the series as they were.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import urllib.request
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from prometheus_client.parser import text_string_to_metric_families

__all__ = ["POINTS", "ControllerTotals", "MetricsSampler", "parse_exposition"]

POINTS: Final = 120
MAX_SCRAPE_BYTES: Final = 16 * 1024 * 1024

Source = str | Callable[[], bytes]
"""An ``http://`` URL of a ``/metrics`` endpoint, or a function answering the exposition."""


@dataclass(slots=True)
class ControllerTotals:
    """One controller's counters at one scrape."""

    reconciles: float = 0.0
    errors: float = 0.0
    time_sum: float = 0.0
    time_count: float = 0.0
    depth: float = 0.0


def parse_exposition(text: str) -> dict[str, ControllerTotals]:
    """Per controller name, its totals in one exposition (text format). Raises
    ``ValueError`` for text that is not the exposition format."""
    out: dict[str, ControllerTotals] = {}

    def of(name: str) -> ControllerTotals:
        found = out.get(name)
        if found is None:
            found = out[name] = ControllerTotals()
        return found

    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            name, labels, value = sample.name, sample.labels, float(sample.value)
            if name == "controller_runtime_reconcile_total" and "controller" in labels:
                of(labels["controller"]).reconciles += value
            elif name == "controller_runtime_reconcile_errors_total" and "controller" in labels:
                of(labels["controller"]).errors += value
            elif name == "controller_runtime_reconcile_time_seconds_sum" and "controller" in labels:
                of(labels["controller"]).time_sum += value
            elif (
                name == "controller_runtime_reconcile_time_seconds_count" and "controller" in labels
            ):
                of(labels["controller"]).time_count += value
            elif name == "workqueue_depth" and "name" in labels:
                of(labels["name"]).depth = value
    return out


@dataclass
class _Series:
    t: deque[float] = field(default_factory=lambda: deque(maxlen=POINTS))
    rate: deque[float] = field(default_factory=lambda: deque(maxlen=POINTS))
    errors: deque[float] = field(default_factory=lambda: deque(maxlen=POINTS))
    latency: deque[float | None] = field(default_factory=lambda: deque(maxlen=POINTS))
    depth: deque[float] = field(default_factory=lambda: deque(maxlen=POINTS))


def _fetch(url: str, timeout: float) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        data: bytes = resp.read(MAX_SCRAPE_BYTES + 1)
    if len(data) > MAX_SCRAPE_BYTES:
        raise ValueError(f"{url}: exposition larger than {MAX_SCRAPE_BYTES} bytes")
    return data


class MetricsSampler:
    """Scrapes ``sources`` every ``interval`` seconds (see the module doc)."""

    def __init__(
        self, sources: list[Source], *, interval: float = 2.0, timeout: float = 5.0
    ) -> None:
        for source in sources:
            if isinstance(source, str) and not source.startswith(("http://", "https://")):
                raise ValueError(f"metrics source {source!r} is not an http(s) URL")
        self.sources = sources
        self.interval = interval
        self.timeout = timeout
        self.series: dict[str, _Series] = {}
        self.error: str | None = None
        self._last: dict[str, ControllerTotals] = {}
        self._last_time: float | None = None
        self._task: asyncio.Task[None] | None = None

    async def _read(self, source: Source) -> str:
        if isinstance(source, str):
            data = await asyncio.to_thread(_fetch, source, self.timeout)
        else:
            data = source()
        return data.decode("utf-8", errors="replace")

    async def sample(self, now: float | None = None) -> None:
        """Scrape every source once and add a point per controller."""
        now = time.time() if now is None else now
        totals: dict[str, ControllerTotals] = {}
        try:
            for source in self.sources:
                for name, t in parse_exposition(await self._read(source)).items():
                    mine = totals.setdefault(name, ControllerTotals())
                    mine.reconciles += t.reconciles
                    mine.errors += t.errors
                    mine.time_sum += t.time_sum
                    mine.time_count += t.time_count
                    mine.depth += t.depth
        except (OSError, ValueError) as exc:
            self.error = str(exc) or type(exc).__name__
            return
        self.error = None
        previous, since = self._last, self._last_time
        self._last, self._last_time = totals, now
        if since is None:
            return
        dt = max(now - since, 1e-6)
        for name, cur in totals.items():
            old = previous.get(name, ControllerTotals())
            restarted = cur.reconciles < old.reconciles or cur.time_count < old.time_count
            if restarted:
                old = ControllerTotals()
            series = self.series.setdefault(name, _Series())
            done = cur.time_count - old.time_count
            series.t.append(now)
            series.rate.append((cur.reconciles - old.reconciles) / dt)
            series.errors.append(max(0.0, cur.errors - old.errors) / dt)
            series.latency.append((cur.time_sum - old.time_sum) / done if done > 0 else None)
            series.depth.append(cur.depth)

    def to_json(self) -> dict[str, Any]:
        """``{"error", "interval", "controllers": {name: {t, rate, errors, latency, depth}}}``."""
        return {
            "error": self.error,
            "interval": self.interval,
            "controllers": {
                name: {
                    "t": list(s.t),
                    "rate": list(s.rate),
                    "errors": list(s.errors),
                    "latency": list(s.latency),
                    "depth": list(s.depth),
                }
                for name, s in sorted(self.series.items())
            },
        }

    async def _loop(self) -> None:
        while True:
            await self.sample()
            await asyncio.sleep(self.interval)

    def start(self) -> None:
        """Scrape in the background until :meth:`stop`."""
        if self._task is None:
            self._task = asyncio.create_task(self._loop(), name="observe:metrics")

    async def stop(self) -> None:
        """Stop scraping."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
