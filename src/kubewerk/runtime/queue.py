"""The work queue and its rate limiters, with client-go/controller-runtime semantics.

:class:`WorkQueue` guarantees, like client-go's ``workqueue.Typed``:

- an item is handed to at most one worker at a time: an item added while it is being
  processed is marked *dirty* and re-queued when the worker calls :meth:`WorkQueue.done`;
- an item is queued at most once however often it is added before a worker takes it;
- :meth:`WorkQueue.add_after` delays an add; several pending delays for one item keep
  the earliest; :meth:`WorkQueue.add_rate_limited` delays by the rate limiter's verdict;
- after :meth:`WorkQueue.shutdown` adds are ignored and :meth:`WorkQueue.get` raises
  :class:`ShutDown` (items still queued are *not* handed out: a level-triggered
  controller relists them on its next start); :meth:`WorkQueue.shutdown_with_drain`
  additionally waits until every item being processed is done.

:func:`default_controller_rate_limiter` is controller-runtime's default: the maximum of
a per-item exponential backoff (5 ms doubling up to 1,000 s) and an overall token
bucket (10 per second, burst 100).
"""

from __future__ import annotations

import asyncio
import collections
import time
from collections.abc import Callable, Hashable
from typing import Generic, Protocol, TypeVar

T = TypeVar("T", bound=Hashable)


class ShutDown(Exception):
    """The queue is shut down: the worker should exit."""


class RateLimiter(Protocol):
    """Decides how long an item waits before it is re-queued."""

    def when(self, item: Hashable) -> float:
        """Seconds to wait before the item's next attempt (records one more failure)."""
        ...

    def forget(self, item: Hashable) -> None:
        """Stop tracking the item (it succeeded)."""
        ...

    def num_requeues(self, item: Hashable) -> int:
        """How many failures the item has accumulated."""
        ...


class ItemExponentialFailureRateLimiter:
    """Per-item exponential backoff: ``base * 2**failures``, capped at ``cap`` seconds."""

    def __init__(self, base: float = 0.005, cap: float = 1000.0) -> None:
        self.base = base
        self.cap = cap
        self._failures: dict[Hashable, int] = {}

    def when(self, item: Hashable) -> float:
        exp = self._failures.get(item, 0)
        self._failures[item] = exp + 1
        if exp > 62:  # 2**exp would overflow Go's int64; the cap applies long before
            return self.cap
        delay: float = min(self.cap, self.base * (2**exp))
        return delay

    def forget(self, item: Hashable) -> None:
        self._failures.pop(item, None)

    def num_requeues(self, item: Hashable) -> int:
        return self._failures.get(item, 0)


class ItemFastSlowRateLimiter:
    """``fast`` delay for the first ``max_fast_attempts`` failures, ``slow`` afterwards."""

    def __init__(self, fast: float, slow: float, max_fast_attempts: int) -> None:
        self.fast = fast
        self.slow = slow
        self.max_fast_attempts = max_fast_attempts
        self._failures: dict[Hashable, int] = {}

    def when(self, item: Hashable) -> float:
        n = self._failures.get(item, 0) + 1
        self._failures[item] = n
        return self.fast if n <= self.max_fast_attempts else self.slow

    def forget(self, item: Hashable) -> None:
        self._failures.pop(item, None)

    def num_requeues(self, item: Hashable) -> int:
        return self._failures.get(item, 0)


class BucketRateLimiter:
    """An overall token bucket (golang.org/x/time/rate ``Reserve`` semantics): ``qps``
    tokens a second, at most ``burst`` stored; each call reserves one token and returns
    how long to wait for it. Not per item: ``forget`` and ``num_requeues`` are no-ops."""

    def __init__(
        self, qps: float = 10.0, burst: int = 100, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.qps = qps
        self.burst = burst
        self._clock = clock
        self._tokens = float(burst)
        self._last = clock()

    def when(self, item: Hashable) -> float:
        now = self._clock()
        self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
        self._last = now
        self._tokens -= 1.0
        if self._tokens >= 0:
            return 0.0
        return -self._tokens / self.qps

    def forget(self, item: Hashable) -> None:
        return None

    def num_requeues(self, item: Hashable) -> int:
        return 0


class MaxOfRateLimiter:
    """The longest delay of several limiters (every limiter records the failure)."""

    def __init__(self, *limiters: RateLimiter) -> None:
        self.limiters = limiters

    def when(self, item: Hashable) -> float:
        return max(limiter.when(item) for limiter in self.limiters)

    def forget(self, item: Hashable) -> None:
        for limiter in self.limiters:
            limiter.forget(item)

    def num_requeues(self, item: Hashable) -> int:
        return max(limiter.num_requeues(item) for limiter in self.limiters)


def default_controller_rate_limiter() -> MaxOfRateLimiter:
    """controller-runtime's default: max(5 ms → 1,000 s per-item backoff, 10 qps / 100
    burst bucket)."""
    return MaxOfRateLimiter(
        ItemExponentialFailureRateLimiter(0.005, 1000.0), BucketRateLimiter(10.0, 100)
    )


class QueueMetrics(Protocol):
    """Hooks the queue calls; :class:`kubewerk.runtime.metrics.WorkQueueMetrics` implements them."""

    def add(self, depth: int) -> None: ...
    def get(self, depth: int, waited: float) -> None: ...
    def done(self, depth: int, worked: float) -> None: ...
    def retry(self) -> None: ...


class WorkQueue(Generic[T]):
    """A deduplicating, rate-limited, delaying work queue for one event loop."""

    def __init__(
        self,
        name: str = "",
        rate_limiter: RateLimiter | None = None,
        metrics: QueueMetrics | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.name = name
        self.rate_limiter: RateLimiter = rate_limiter or default_controller_rate_limiter()
        self.metrics = metrics
        self._clock = clock
        self._queue: collections.deque[T] = collections.deque()
        self._dirty: set[T] = set()
        self._processing: dict[T, float] = {}  # item -> when a worker took it
        self._added_at: dict[T, float] = {}
        self._waiting: dict[T, tuple[float, asyncio.TimerHandle]] = {}
        self._getters: collections.deque[asyncio.Future[None]] = collections.deque()
        self._shutting_down = False
        self._idle = asyncio.Event()
        self._idle.set()

    # -- adding -------------------------------------------------------------------------

    def add(self, item: T) -> None:
        """Queue the item unless it is already queued; if a worker has it, mark it dirty."""
        if self._shutting_down or item in self._dirty:
            return
        self._dirty.add(item)
        if item not in self._processing:
            self._queue.append(item)
            self._added_at.setdefault(item, self._clock())
            self._wake_one()
        if self.metrics is not None:
            self.metrics.add(len(self._queue))

    def add_after(self, item: T, delay: float) -> None:
        """Queue the item after ``delay`` seconds (at once when ``delay <= 0``); the
        earliest pending time wins."""
        if self._shutting_down:
            return
        if delay <= 0:
            self._cancel_wait(item)
            self.add(item)
            return
        loop = asyncio.get_running_loop()
        due = loop.time() + delay
        pending = self._waiting.get(item)
        if pending is not None:
            if pending[0] <= due:
                return
            pending[1].cancel()
        handle = loop.call_at(due, self._fire, item)
        self._waiting[item] = (due, handle)

    def _fire(self, item: T) -> None:
        self._waiting.pop(item, None)
        self.add(item)

    def _cancel_wait(self, item: T) -> None:
        pending = self._waiting.pop(item, None)
        if pending is not None:
            pending[1].cancel()

    def add_rate_limited(self, item: T) -> None:
        """Queue the item after the rate limiter's delay (counts as a retry)."""
        if self._shutting_down:
            return
        if self.metrics is not None:
            self.metrics.retry()
        self.add_after(item, self.rate_limiter.when(item))

    def forget(self, item: T) -> None:
        """Reset the item's backoff (call after it was processed successfully)."""
        self.rate_limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        """Failures the rate limiter has counted for the item."""
        return self.rate_limiter.num_requeues(item)

    # -- taking -------------------------------------------------------------------------

    def _wake_one(self) -> None:
        while self._getters:
            fut = self._getters.popleft()
            if not fut.done():
                fut.set_result(None)
                return

    async def get(self) -> T:
        """The next item (waits for one); raises :class:`ShutDown` once the queue is shut down."""
        while not self._queue:
            if self._shutting_down:
                raise ShutDown(self.name)
            fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._getters.append(fut)
            try:
                await fut
            except asyncio.CancelledError:
                if fut.done() and not fut.cancelled():
                    self._wake_one()  # pass our wake-up on to another getter
                raise
        if self._shutting_down:
            raise ShutDown(self.name)
        item = self._queue.popleft()
        now = self._clock()
        self._processing[item] = now
        self._dirty.discard(item)
        self._idle.clear()
        added = self._added_at.pop(item, now)
        if self.metrics is not None:
            self.metrics.get(len(self._queue), now - added)
        return item

    def done(self, item: T) -> None:
        """The worker finished the item; if it was re-added meanwhile, queue it again."""
        started = self._processing.pop(item, None)
        if item in self._dirty and not self._shutting_down:
            self._queue.append(item)
            self._added_at.setdefault(item, self._clock())
            self._wake_one()
        if started is not None and self.metrics is not None:
            self.metrics.done(len(self._queue), self._clock() - started)
        if not self._processing:
            self._idle.set()

    # -- state --------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._queue)

    @property
    def shutting_down(self) -> bool:
        """True once :meth:`shutdown` was called."""
        return self._shutting_down

    def in_flight(self) -> int:
        """How many items are being processed (taken by :meth:`get`, not yet :meth:`done`)."""
        return len(self._processing)

    def processing(self) -> dict[T, float]:
        """Items being processed and when each was taken (monotonic clock)."""
        return dict(self._processing)

    def unfinished_work_seconds(self) -> float:
        """Sum of the time every in-flight item has been processed so far."""
        now = self._clock()
        return sum(now - t for t in self._processing.values())

    def longest_running_processor_seconds(self) -> float:
        """How long the oldest in-flight item has been processed."""
        if not self._processing:
            return 0.0
        return self._clock() - min(self._processing.values())

    def shutdown(self) -> None:
        """Stop accepting items, cancel delayed adds, and make :meth:`get` raise
        :class:`ShutDown`."""
        self._shutting_down = True
        for _, handle in self._waiting.values():
            handle.cancel()
        self._waiting.clear()
        while self._getters:
            fut = self._getters.popleft()
            if not fut.done():
                fut.set_result(None)

    async def shutdown_with_drain(self, timeout: float | None = None) -> bool:
        """Shut down and wait until in-flight items are done; False if ``timeout`` passed first."""
        self.shutdown()
        try:
            await asyncio.wait_for(self._idle.wait(), timeout)
        except TimeoutError:
            return False
        return True
