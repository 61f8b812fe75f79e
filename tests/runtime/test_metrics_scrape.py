"""Gauges computed at scrape time read the queue's state exactly."""

from __future__ import annotations

from kubewerk.runtime.metrics import Metrics
from kubewerk.runtime.queue import WorkQueue


def _sample(text: str, prefix: str) -> float:
    return float(next(x for x in text.splitlines() if x.startswith(prefix)).split()[-1])


async def test_depth_and_active_workers_follow_the_queue() -> None:
    m = Metrics(process=False)
    q: WorkQueue[str] = WorkQueue("things", metrics=m.queue_metrics("things"))
    m.watch_queue(q)  # type: ignore[arg-type]
    depth = 'workqueue_depth{controller="things",name="things",priority=""}'
    active = 'controller_runtime_active_workers{controller="things"}'
    for key in ("a", "b", "c", "a"):
        q.add(key)
    text = m.exposition().decode()
    assert _sample(text, depth) == 3 and _sample(text, active) == 0
    first, second = await q.get(), await q.get()
    q.add(first)  # dirty while processing: not queued again yet
    text = m.exposition().decode()
    assert _sample(text, depth) == 1 and _sample(text, active) == 2
    q.done(first)  # re-queued
    q.done(second)
    text = m.exposition().decode()
    assert _sample(text, depth) == 2 and _sample(text, active) == 0
    assert 'workqueue_adds_total{controller="things",name="things"} 4.0' in text
