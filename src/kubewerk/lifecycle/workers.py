"""A controller whose workers exist only while it has work.

The runtime's :class:`~kubewerk.runtime.Controller` starts ``max_concurrent_reconciles``
worker tasks that wait on its queue for as long as the manager runs. A platform of many
kinds, most of them idle most of the time, would keep one waiting task per kind.
:class:`OnDemandController` keeps the controller's guarantees (one worker per key at a
time, at most ``max_concurrent_reconciles`` at once, graceful drain on stop) but starts
a worker when a key is queued and no idle worker can take it, and lets the worker end
when the queue is empty. A kind without objects (or without work) holds no task.
Measured (docs/lifecycle.md): an idle worker task costs about 1.2 KB; the kind's queue
itself about 3.5 KB.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Hashable
from typing import Any, TypeVar

from kubewerk.client.client import Client
from kubewerk.runtime.controller import Controller
from kubewerk.runtime.events import EventRecorder
from kubewerk.runtime.informer import Cache
from kubewerk.runtime.metrics import Metrics
from kubewerk.runtime.queue import QueueMetrics, RateLimiter, WorkQueue

__all__ = ["OnDemandController", "WakingQueue"]

log = logging.getLogger("kubewerk.lifecycle.workers")

K = TypeVar("K", bound=Hashable)


class WakingQueue(WorkQueue[K]):
    """A :class:`~kubewerk.runtime.WorkQueue` that calls ``on_ready()`` whenever an add
    leaves an item waiting in the queue (immediately or when a delay fires)."""

    def __init__(
        self,
        name: str,
        rate_limiter: RateLimiter | None,
        metrics: QueueMetrics | None,
        on_ready: Any,
    ) -> None:
        super().__init__(name, rate_limiter, metrics)
        self.on_ready = on_ready

    def add(self, item: K) -> None:
        """As :meth:`WorkQueue.add`, then wake the owner when the item waits in the queue."""
        super().add(item)
        if len(self):
            self.on_ready()


class OnDemandController(Controller[Any]):
    """A :class:`~kubewerk.runtime.Controller` with workers started on demand (see the
    module doc)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._started = False
        self._tasks: set[asyncio.Task[None]] = set()
        self._alive = 0  # workers that have not returned (a finished task may linger in _tasks)
        self.workers_started = 0
        """How many worker tasks were started in all (for tests and measurements)."""

    def bind(self, client: Client, cache: Cache, metrics: Metrics, recorder: EventRecorder) -> None:
        """As :meth:`Controller.bind`, with a queue that wakes this controller."""
        super().bind(client, cache, metrics, recorder)
        base = self.queue
        self.queue = WakingQueue(self.name, base.rate_limiter, base.metrics, self._wake)
        metrics.watch_queue(self.queue)  # type: ignore[arg-type]

    @property
    def running(self) -> bool:
        """True from :meth:`start` until :meth:`stop`, with or without live workers."""
        return self._started

    @property
    def live_workers(self) -> int:
        """Worker tasks alive now."""
        return self._alive

    def start(self) -> None:
        """Accept work; workers start as keys arrive (some may be queued already)."""
        if getattr(self, "informer", None) is None:
            raise RuntimeError(f"controller {self.name} is not bound to a manager")
        self._started = True
        self._wake()

    def _wake(self) -> None:
        if not self._started or self.queue.shutting_down:
            return
        busy = self.queue.in_flight()
        wanted = min(len(self.queue), self.max_concurrent_reconciles - busy)
        spare = self._alive - busy  # started, about to take an item
        for _ in range(wanted - spare):
            self._alive += 1
            task = asyncio.get_running_loop().create_task(self._work(), name=f"{self.name} worker")
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
            self.workers_started += 1

    async def _work(self) -> None:
        queue = self.queue
        try:
            # no await between the test and get(): the item seen is the one taken
            while len(queue) and not queue.shutting_down:
                key = await queue.get()
                try:
                    await self._process(key)
                except asyncio.CancelledError:
                    raise
                except Exception:  # never let anything kill the worker
                    log.exception("controller %s: unexpected failure handling %s", self.name, key)
                    queue.add_rate_limited(key)
                finally:
                    queue.done(key)
        finally:
            self._alive -= 1

    async def stop(self, grace: float = 30.0) -> None:
        """Stop taking work, let in-flight reconciles finish (up to ``grace`` seconds),
        then cancel what is left."""
        self._started = False
        drained = await self.queue.shutdown_with_drain(grace)
        if not drained:
            log.warning(
                "controller %s: reconciles still running after %.0fs; cancelling", self.name, grace
            )
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()
