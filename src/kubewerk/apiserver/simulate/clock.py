"""The simulation's clock: wall time by default, a hand-driven one for tests.

Everything the simulated cluster does later (a container starting, a Job's pod finishing,
a CronJob's next schedule, a node's heartbeat, a back-off) is a timer on one ``Clock``, and
every timestamp it writes comes from the same clock, so a test that drives a
``ManualClock`` sees a whole cluster move exactly as far as it advanced it.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import heapq
import itertools
from collections.abc import Callable
from typing import Protocol


class TimerHandle(Protocol):
    def cancel(self) -> None: ...


class Clock(Protocol):
    """Time for the simulation: ``now()`` (aware UTC) and ``call_later`` timers."""

    def now(self) -> dt.datetime: ...

    def call_later(self, delay: float, fn: Callable[[], None]) -> TimerHandle: ...


def rfc3339(when: dt.datetime) -> str:
    """``metav1.Time`` as serialised: UTC, second precision, ``Z``."""
    return when.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_rfc3339(text: str) -> dt.datetime | None:
    """An RFC 3339 timestamp as an aware datetime (None if it is not one)."""
    try:
        return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


class SystemClock:
    """Wall time; timers on the running event loop."""

    def now(self) -> dt.datetime:
        return dt.datetime.now(dt.UTC)

    def call_later(self, delay: float, fn: Callable[[], None]) -> TimerHandle:
        return asyncio.get_running_loop().call_later(max(0.0, delay), fn)


class _ManualTimer:
    __slots__ = ("cancelled",)

    def __init__(self) -> None:
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class ManualClock:
    """A clock that moves only when told to (``advance``/``set``).

    Timers fire, in due order, during ``advance``; a timer set by a firing timer for a
    moment inside the advanced span fires in the same call. Starts at ``start`` (default
    2024-01-01T00:00:00Z).
    """

    def __init__(self, start: dt.datetime | None = None) -> None:
        self._now = start or dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
        if self._now.tzinfo is None:
            raise ValueError("ManualClock needs an aware datetime")
        self._timers: list[tuple[dt.datetime, int, _ManualTimer, Callable[[], None]]] = []
        self._seq = itertools.count()

    def now(self) -> dt.datetime:
        return self._now

    def call_later(self, delay: float, fn: Callable[[], None]) -> TimerHandle:
        timer = _ManualTimer()
        due = self._now + dt.timedelta(seconds=max(0.0, delay))
        heapq.heappush(self._timers, (due, next(self._seq), timer, fn))
        return timer

    @property
    def pending(self) -> int:
        """Timers not yet fired nor cancelled."""
        return sum(1 for _, _, t, _ in self._timers if not t.cancelled)

    def advance(self, seconds: float) -> None:
        """Move time forward by ``seconds``, firing every timer due on the way."""
        self.set(self._now + dt.timedelta(seconds=seconds))

    def set(self, when: dt.datetime) -> None:
        """Move time forward to ``when`` (never backwards), firing due timers in order."""
        if when < self._now:
            raise ValueError("a ManualClock does not go backwards")
        while self._timers and self._timers[0][0] <= when:
            due, _, timer, fn = heapq.heappop(self._timers)
            if timer.cancelled:
                continue
            self._now = max(self._now, due)
            fn()
        self._now = when
