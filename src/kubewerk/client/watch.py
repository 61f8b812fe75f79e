"""List-then-watch with resume and relist (the reflector's loop).

:func:`list_watch` yields one :class:`Listed` (the full, paginated list and its
resourceVersion) and then watch events, forever, until cancelled:

- each watch resumes from the last resourceVersion seen (object events and bookmarks),
  so a dropped connection or a server-side timeout loses nothing;
- a 410 Gone / Expired (the revision was compacted, or the server lost its history)
  triggers a fresh list, yielded as another :class:`Listed` that the consumer must
  treat as a replacement of its state (objects absent from it were deleted);
- an unreachable server is retried with capped exponential backoff (jittered), and so
  is a watch answered 429 (throttled: the watch resumes from its resourceVersion after
  ``Retry-After`` or the backoff, as client-go's reflector does); after any other server
  error the loop relists;
- a watch never hangs: the server is asked to end it after ``watch_timeout`` (jittered
  between 1x and 2x, as client-go's reflector does), the client gives up on it 60 s
  after that, and with ``idle_timeout`` a watch whose connection brings nothing (no
  event, no bookmark, not even the answer's headers) for that long is closed and
  resumed from its resourceVersion on a new connection (a half-open connection, a
  stalled proxy). Bookmarks are always asked for, and an API server sends one to such
  a watch about every minute (kube-apiserver's watch cache; the embedded server every
  ``bookmark_interval``), so the default :data:`WATCH_IDLE_TIMEOUT` of two minutes only
  fires on a dead connection.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import AsyncIterator
from dataclasses import dataclass

from kubewerk.client.client import Client, WatchEvent
from kubewerk.client.errors import ApiError, Gone, ServerUnreachable, TooManyRequests
from kubewerk.client.resources import ResourceType

log = logging.getLogger("kubewerk.client.watch")

WATCH_TIMEOUT = 300
"""Seconds a watch asks the server to run (``timeoutSeconds``, jittered 1x-2x): client-go's
reflector's minimum watch timeout of five minutes."""
WATCH_IDLE_TIMEOUT = 120.0
"""Seconds without a byte on a watch connection after which it is taken for dead."""


@dataclass(slots=True)
class Listed:
    """A complete list: replace the consumer's state with ``items``."""

    items: list[dict[str, object]]
    resource_version: str


@dataclass(slots=True)
class Backoff:
    """Reconnect backoff: ``initial`` doubling to ``cap`` seconds, reset after success."""

    initial: float = 0.2
    cap: float = 10.0
    _current: float = 0.0

    def next(self) -> float:
        """The next delay (with ±25 % jitter)."""
        self._current = self.initial if self._current == 0 else min(self.cap, self._current * 2)
        return self._current * random.uniform(0.75, 1.25)

    def reset(self) -> None:
        """Back to the initial delay."""
        self._current = 0.0


async def list_watch(
    client: Client,
    rt: ResourceType,
    namespace: str | None = None,
    *,
    label_selector: str | None = None,
    field_selector: str | None = None,
    page_size: int = 500,
    watch_timeout: int = WATCH_TIMEOUT,
    idle_timeout: float | None = WATCH_IDLE_TIMEOUT,
    backoff: Backoff | None = None,
) -> AsyncIterator[Listed | WatchEvent]:
    """Yield a :class:`Listed` then watch events, resuming and relisting as described above."""
    delay = backoff or Backoff()
    rv: str | None = None
    while True:
        if rv is None:
            try:
                page = await client.list_all(
                    rt,
                    namespace,
                    label_selector=label_selector,
                    field_selector=field_selector,
                    page_size=page_size,
                )
            except (ServerUnreachable, ApiError) as exc:
                wait = delay.next()
                log.warning("list %s failed (%s); retrying in %.1fs", rt.group_resource, exc, wait)
                await asyncio.sleep(wait)
                continue
            rv = page.resource_version
            delay.reset()
            yield Listed(page.items, rv)
        # watch from rv; jitter the server-side timeout like client-go (between 1x and 2x)
        timeout = max(1, int(watch_timeout * random.uniform(1.0, 2.0)))
        try:
            async for event in client.watch(
                rt,
                namespace,
                resource_version=rv,
                label_selector=label_selector,
                field_selector=field_selector,
                allow_bookmarks=True,
                timeout_seconds=timeout,
                idle_timeout=idle_timeout,
            ):
                new_rv = event.resource_version
                if new_rv:
                    rv = new_rv
                delay.reset()
                if event.type != "BOOKMARK":
                    event.object.setdefault("apiVersion", rt.api_version)
                    event.object.setdefault("kind", rt.kind)
                yield event
        except Gone:
            log.info("watch %s: resourceVersion %s is gone; relisting", rt.group_resource, rv)
            rv = None
        except ServerUnreachable as exc:
            wait = delay.next()
            log.warning(
                "watch %s interrupted (%s); resuming from %s in %.1fs",
                rt.group_resource,
                exc.why,
                rv,
                wait,
            )
            await asyncio.sleep(wait)
        except TooManyRequests as exc:
            # throttled (priority and fairness): relisting would only add load; resume
            wait = delay.next()
            if exc.retry_after is not None:
                wait = max(wait, exc.retry_after)
            log.warning(
                "watch %s throttled (%s); resuming from %s in %.1fs",
                rt.group_resource,
                exc,
                rv,
                wait,
            )
            await asyncio.sleep(wait)
        except ApiError as exc:
            wait = delay.next()
            log.warning("watch %s failed (%s); relisting in %.1fs", rt.group_resource, exc, wait)
            rv = None
            await asyncio.sleep(wait)
