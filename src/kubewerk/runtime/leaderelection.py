"""Leader election on a coordination.k8s.io/v1 Lease, with client-go's rules.

Defaults follow controller-runtime: lease duration 15 s, renew deadline 10 s, retry
period 2 s. Guarantees:

- a candidate takes the lease only when it is free (no holder) or its holder has not
  renewed it for ``lease_duration`` *as observed on this candidate's clock* (the time
  the answer in which this candidate last saw the lease record change arrived), never by
  comparing clocks across machines;
- every write carries the lease's resourceVersion, so two candidates racing for a
  free or expired lease cannot both win (the loser gets a 409 and stays a follower);
- ``leaseTransitions`` counts changes of holder; ``acquireTime`` is kept across renewals;
- a leader whose renewal finds the lease held by another candidate stops leading at
  once (it never rewrites a record that names someone else);
- the leader renews every ``retry_period``; it stops leading (``on_stopped_leading``)
  once ``renew_deadline`` has passed since it *sent* its last successful renewal (or
  acquisition) without another succeeding. That moment is the earliest the server can
  have recorded the renewal; another candidate saw it no earlier and waits
  ``lease_duration`` from then, so with ``renew_deadline < lease_duration`` the old
  leader has stopped before anyone can take over, however slow the server's answers
  (client-go counts its deadline from a retry period after the answer came back, which
  lets a slow answer push a cut-off leader past the lease's expiry);
- on a clean stop the leader releases the lease (empty holder, duration 1 s), so a
  successor takes over at once instead of after the lease duration; the release is
  given up after ``renew_deadline``, so stopping never hangs on an unreachable server.

:func:`decide` is the pure decision step, tested on its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import socket
import time
import uuid
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from kubewerk.client.client import Client
from kubewerk.client.errors import ApiError, NotFound, ServerUnreachable
from kubewerk.client.resources import LEASE

log = logging.getLogger("kubewerk.runtime.leaderelection")

LEASE_DURATION = 15.0
RENEW_DEADLINE = 10.0
RETRY_PERIOD = 2.0
JITTER_FACTOR = 1.2


def micro_time(epoch: float) -> str:
    """metav1.MicroTime text."""
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True)
class LeaderRecord:
    """The lease fields leader election reads and writes."""

    holder: str = ""
    lease_duration_seconds: int = 0
    acquire_time: str = ""
    renew_time: str = ""
    transitions: int = 0

    @classmethod
    def from_lease(cls, lease: dict[str, Any]) -> LeaderRecord:
        spec = lease.get("spec") or {}
        return cls(
            holder=str(spec.get("holderIdentity") or ""),
            lease_duration_seconds=int(spec.get("leaseDurationSeconds") or 0),
            acquire_time=str(spec.get("acquireTime") or ""),
            renew_time=str(spec.get("renewTime") or ""),
            transitions=int(spec.get("leaseTransitions") or 0),
        )

    def spec(self) -> dict[str, Any]:
        """The Lease ``spec`` for this record."""
        spec: dict[str, Any] = {
            "holderIdentity": self.holder or None,
            "leaseDurationSeconds": self.lease_duration_seconds,
            "leaseTransitions": self.transitions,
        }
        if self.acquire_time:
            spec["acquireTime"] = self.acquire_time
        if self.renew_time:
            spec["renewTime"] = self.renew_time
        return spec


@dataclass
class Observed:
    """What this candidate last saw: the record and when (local monotonic clock)."""

    record: LeaderRecord | None = None
    time: float = 0.0


def decide(
    current: LeaderRecord,
    observed: Observed,
    identity: str,
    now_mono: float,
    now_wall: float,
    lease_duration: float,
) -> tuple[bool, LeaderRecord, str]:
    """One ``tryAcquireOrRenew`` decision on an existing lease.

    Updates ``observed`` when the record changed. Returns (should write, record to
    write, reason); ``should write`` is False when another holder's lease is still valid.
    """
    if observed.record != current:
        observed.record = current
        observed.time = now_mono
    am_leader = current.holder == identity
    valid = observed.time + current.lease_duration_seconds > now_mono
    if current.holder and valid and not am_leader:
        return False, current, f"lease is held by {current.holder} and has not yet expired"
    stamp = micro_time(now_wall)
    if am_leader:
        record = LeaderRecord(
            identity, int(lease_duration), current.acquire_time or stamp, stamp, current.transitions
        )
    else:
        record = LeaderRecord(identity, int(lease_duration), stamp, stamp, current.transitions + 1)
    return True, record, "acquire" if not am_leader else "renew"


def default_identity() -> str:
    """hostname plus a random suffix (unique per process, as controller-runtime does)."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


class LeaderElector:
    """Campaigns for a Lease and keeps it; see the module guarantees."""

    def __init__(
        self,
        client: Client,
        name: str,
        namespace: str,
        identity: str | None = None,
        *,
        lease_duration: float = LEASE_DURATION,
        renew_deadline: float = RENEW_DEADLINE,
        retry_period: float = RETRY_PERIOD,
        release_on_cancel: bool = True,
        on_started_leading: Callable[[], Awaitable[None] | None] | None = None,
        on_stopped_leading: Callable[[], Awaitable[None] | None] | None = None,
        on_new_leader: Callable[[str], None] | None = None,
        status_gauge: Any = None,
    ) -> None:
        if lease_duration <= renew_deadline:
            raise ValueError("lease_duration must be greater than renew_deadline")
        if renew_deadline <= JITTER_FACTOR * retry_period:
            raise ValueError("renew_deadline must be greater than retry_period*1.2")
        self.client = client
        self.name = name
        self.namespace = namespace
        self.identity = identity or default_identity()
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.release_on_cancel = release_on_cancel
        self.on_started_leading = on_started_leading
        self.on_stopped_leading = on_stopped_leading
        self.on_new_leader = on_new_leader
        self.status_gauge = status_gauge
        self.observed = Observed()
        self._leader_seen = ""
        self._lease_rv = ""
        self.renewed_at = 0.0  # monotonic time the last successful write was sent
        self.is_leader = False
        self.became_leader = asyncio.Event()

    def _set_leader(self, value: bool) -> None:
        self.is_leader = value
        if self.status_gauge is not None:
            self.status_gauge.labels(self.name).set(1 if value else 0)

    async def try_acquire_or_renew(self) -> bool:
        """One attempt; True when this candidate holds the lease afterwards."""
        now_mono = time.monotonic()
        now_wall = time.time()
        # fast path: renew our own valid lease without a read (only a record naming us:
        # after a renewal found another holder, rewriting that record would "renew"
        # someone else's lease and keep this candidate leading)
        obs = self.observed
        if (
            self.is_leader
            and obs.record is not None
            and obs.record.holder == self.identity
            and self._lease_rv
            and obs.time + obs.record.lease_duration_seconds > now_mono
        ):
            record = replace(
                obs.record,
                renew_time=micro_time(now_wall),
                lease_duration_seconds=int(self.lease_duration),
            )
            if await self._update(record):
                return True
        try:
            lease = await self.client.get(LEASE, self.name, self.namespace)
        except NotFound:
            stamp = micro_time(now_wall)
            record = LeaderRecord(self.identity, int(self.lease_duration), stamp, stamp, 0)
            body = {
                "apiVersion": LEASE.api_version,
                "kind": "Lease",
                "metadata": {"name": self.name, "namespace": self.namespace},
                "spec": record.spec(),
            }
            sent = time.monotonic()
            try:
                created = await self.client.create(body)
            except (ApiError, ServerUnreachable) as exc:
                log.info("could not create lease %s/%s: %s", self.namespace, self.name, exc)
                return False
            self._observe(record, str(created["metadata"].get("resourceVersion", "")), now_mono)
            self.renewed_at = sent
            return True
        except (ApiError, ServerUnreachable) as exc:
            log.info("could not read lease %s/%s: %s", self.namespace, self.name, exc)
            return False
        # a change seen in this answer is dated from its arrival, never from when the
        # read was sent (the record may have changed while the read was on its way)
        now_mono = time.monotonic()
        now_wall = time.time()
        current = LeaderRecord.from_lease(lease)
        self._lease_rv = str(lease["metadata"].get("resourceVersion", ""))
        self._note_leader(current.holder)
        write, record, reason = decide(
            current, self.observed, self.identity, now_mono, now_wall, self.lease_duration
        )
        if not write:
            log.debug("%s", reason)
            return False
        return await self._update(record)

    def _observe(self, record: LeaderRecord, rv: str, now_mono: float) -> None:
        self.observed = Observed(record, now_mono)
        self._lease_rv = rv
        self._note_leader(record.holder)

    def _note_leader(self, holder: str) -> None:
        if holder and holder != self._leader_seen:
            self._leader_seen = holder
            if self.on_new_leader is not None:
                self.on_new_leader(holder)

    async def _update(self, record: LeaderRecord) -> bool:
        body = {
            "apiVersion": LEASE.api_version,
            "kind": "Lease",
            "metadata": {
                "name": self.name,
                "namespace": self.namespace,
                "resourceVersion": self._lease_rv,
            },
            "spec": record.spec(),
        }
        sent = time.monotonic()
        try:
            updated = await self.client.replace(body)
        except (ApiError, ServerUnreachable) as exc:
            log.info("could not update lease %s/%s: %s", self.namespace, self.name, exc)
            return False
        self._observe(record, str(updated["metadata"].get("resourceVersion", "")), time.monotonic())
        self.renewed_at = sent
        return True

    async def _call(self, fn: Callable[[], Awaitable[None] | None] | None) -> None:
        if fn is None:
            return
        result = fn()
        if result is not None:
            await result

    async def acquire(self) -> None:
        """Wait until this candidate holds the lease (retry period with jitter)."""
        while True:
            if await self.try_acquire_or_renew():
                log.info("%s acquired lease %s/%s", self.identity, self.namespace, self.name)
                self._set_leader(True)
                self.became_leader.set()
                return
            await asyncio.sleep(self.retry_period * random.uniform(1.0, JITTER_FACTOR))

    async def renew_until_lost(self) -> None:
        """Renew every retry period; return (no longer leading) once ``renew_deadline``
        has passed since the last successful renewal was sent (an attempt under way at
        that moment is cancelled), or at once when an attempt finds the lease held by
        another candidate (client-go carries on until the deadline)."""
        while True:
            await asyncio.sleep(self.retry_period)
            while True:
                budget = self.renewed_at + self.renew_deadline - time.monotonic()
                renewed = False
                if budget > 0:
                    try:
                        renewed = await asyncio.wait_for(self.try_acquire_or_renew(), budget)
                    except TimeoutError:
                        renewed = False
                if renewed:
                    break
                budget = self.renewed_at + self.renew_deadline - time.monotonic()
                seen = self.observed.record
                holder = seen.holder if seen is not None else ""
                if holder not in ("", self.identity):
                    why = f"is held by {holder}"
                elif budget <= 0:
                    why = f"not renewed within {self.renew_deadline:.1f}s"
                else:
                    await asyncio.sleep(min(self.retry_period, budget))
                    continue
                log.error(
                    "%s: lease %s/%s %s; no longer leading",
                    self.identity,
                    self.namespace,
                    self.name,
                    why,
                )
                self._set_leader(False)
                return

    async def release(self) -> bool:
        """Give the lease up if we hold it (empty holder, 1 s duration). Gives up after
        ``renew_deadline`` (as client-go bounds its release), so stopping never hangs on
        an unreachable server; the lease then expires by itself. No longer leading
        afterwards either way."""
        if not self.is_leader or self.observed.record is None:
            return True
        now = micro_time(time.time())
        record = LeaderRecord("", 1, now, now, self.observed.record.transitions)
        try:
            ok = await asyncio.wait_for(self._update(record), self.renew_deadline)
        except TimeoutError:
            log.info("could not release lease %s/%s in time", self.namespace, self.name)
            ok = False
        finally:
            self._set_leader(False)
        return ok

    async def run(self, lead: Callable[[], Coroutine[Any, Any, None]]) -> bool:
        """Acquire, then run ``lead()`` while renewing. Returns True when ``lead``
        finished by itself; False when leadership was lost (``lead`` is cancelled).
        On cancellation the lease is released (``release_on_cancel``)."""
        if self.status_gauge is not None:
            self.status_gauge.labels(self.name).set(0)
        try:
            await self.acquire()
            await self._call(self.on_started_leading)
            leading: asyncio.Task[None] = asyncio.create_task(lead(), name=f"leader {self.name}")
            renewing = asyncio.create_task(self.renew_until_lost(), name=f"renew {self.name}")
            try:
                done, _ = await asyncio.wait(
                    {leading, renewing}, return_when=asyncio.FIRST_COMPLETED
                )
            finally:
                for t in (leading, renewing):
                    if not t.done():
                        t.cancel()
                for t in (leading, renewing):
                    with contextlib.suppress(asyncio.CancelledError):
                        await t
            lost = renewing in done and leading not in done
            if lost:
                await self._call(self.on_stopped_leading)
                return False
            if leading.exception() is not None:
                raise leading.exception()  # type: ignore[misc]
            return True
        except asyncio.CancelledError:
            if self.release_on_cancel and self.is_leader:
                with contextlib.suppress(Exception):
                    await asyncio.shield(self.release())
            raise
        finally:
            if self.is_leader and self.release_on_cancel:
                with contextlib.suppress(Exception):
                    await self.release()
            self._set_leader(False)
