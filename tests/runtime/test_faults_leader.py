"""Leader election while the API server is unreachable from the leader: it must stop
leading before its lease could be taken, so there are never two leaders at once."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator

import pytest

from kubewerk.apiserver.server import EmbeddedServer
from kubewerk.client import LEASE, Client, RetryPolicy
from kubewerk.runtime.leaderelection import LeaderElector
from tests.runtime.faults import FaultProxy

# leaseDurationSeconds is whole seconds on the wire (client-go truncates too)
LEASE_S, RENEW_S = 2.0, 1.5


class Lead:
    """A lead function that records when it started and stopped (monotonic)."""

    def __init__(self, name: str, log: list[tuple[float, str, str]]) -> None:
        self.name = name
        self.log = log

    async def __call__(self) -> None:
        self.log.append((time.monotonic(), self.name, "start"))
        try:
            await asyncio.Event().wait()
        finally:
            self.log.append((time.monotonic(), self.name, "stop"))


@pytest.fixture
async def server() -> AsyncIterator[EmbeddedServer]:
    async with EmbeddedServer("memory", bookmark_interval=0.5) as srv:
        yield srv


def overlaps(log: list[tuple[float, str, str]]) -> list[str]:
    """Moments at which two candidates were leading at once."""
    leading: set[str] = set()
    bad = []
    for _, who, what in sorted(log):
        if what == "start":
            leading.add(who)
            if len(leading) > 1:
                bad.append(f"{sorted(leading)} lead at once")
        else:
            leading.discard(who)
    return bad


async def test_cut_off_leader_stops_before_its_lease_can_be_taken(
    server: EmbeddedServer,
) -> None:
    """The leader's answers arrive 0.5 s late (a slow path), then it is cut off
    (nothing forwarded either way). Its renew deadline must count from when its last
    successful renewal was *sent* (the server cannot have recorded it earlier), not from
    when the answer came back: otherwise it leads up to the answer's latency past the
    point where a fast follower, which saw the renewal at once, takes the lease."""
    # longer than the module's: slow renewals (0.5 s each) must not miss the deadline on
    # a loaded machine before the cut, which is what the test is about
    lease_s, renew_s = 4.0, 3.5
    log: list[tuple[float, str, str]] = []
    async with (
        FaultProxy("127.0.0.1", server.port) as proxy,
        Client.from_url(proxy.url, retry=RetryPolicy(max_retries=0)) as ca,
        Client.from_url(server.url) as cb,
    ):
        a = LeaderElector(
            ca,
            "faults",
            "default",
            "a",
            lease_duration=lease_s,
            renew_deadline=renew_s,
            retry_period=0.25,
        )
        # the follower polls often, so it takes the lease as early as the rules allow
        b = LeaderElector(
            cb,
            "faults",
            "default",
            "b",
            lease_duration=lease_s,
            renew_deadline=renew_s,
            retry_period=0.05,
        )
        ta = asyncio.create_task(a.run(Lead("a", log)))
        await asyncio.wait_for(a.became_leader.wait(), 5)
        tb = asyncio.create_task(b.run(Lead("b", log)))
        proxy.delay = 0.5
        await asyncio.sleep(1.2)  # a few slow renewals succeed
        assert a.is_leader and not b.is_leader
        # cut the leader off right after a renewal's (late) answer came back
        renewed = a.observed.time

        async def next_renewal() -> None:
            while a.observed.time == renewed:
                await asyncio.sleep(0.002)

        await asyncio.wait_for(next_renewal(), renew_s)
        assert a.is_leader
        proxy.stall()  # partition: the leader reaches nothing
        cut = time.monotonic()
        lost = await asyncio.wait_for(ta, 5)
        assert lost is False  # run() reports the lost lease
        await asyncio.wait_for(b.became_leader.wait(), 5)
        took = time.monotonic() - cut
        proxy.heal()
        assert overlaps(log) == [], log
        assert took < lease_s + 2.0  # the lease's expiry, plus room for a loaded machine
        lease = await cb.get(LEASE, "faults", "default")
        assert lease["spec"]["holderIdentity"] == "b"
        tb.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await tb


async def test_leader_that_cannot_reach_the_server_gives_up_and_cannot_come_back(
    server: EmbeddedServer,
) -> None:
    """Connections to the server are refused for the leader: it stops leading within
    the renew deadline; once the follower leads, the old leader's delayed writes cannot
    take the lease back (each carries the resourceVersion it read)."""
    log: list[tuple[float, str, str]] = []
    async with (
        FaultProxy("127.0.0.1", server.port) as proxy,
        Client.from_url(proxy.url, retry=RetryPolicy(max_retries=0)) as ca,
        Client.from_url(server.url) as cb,
    ):
        a = LeaderElector(
            ca,
            "faults2",
            "default",
            "a",
            lease_duration=LEASE_S,
            renew_deadline=RENEW_S,
            retry_period=0.25,
        )
        b = LeaderElector(
            cb,
            "faults2",
            "default",
            "b",
            lease_duration=LEASE_S,
            renew_deadline=RENEW_S,
            retry_period=0.1,
        )
        ta = asyncio.create_task(a.run(Lead("a", log)))
        await asyncio.wait_for(a.became_leader.wait(), 5)
        tb = asyncio.create_task(b.run(Lead("b", log)))
        await asyncio.sleep(0.3)
        proxy.mode = "refuse"
        proxy.reset_all()
        cut = time.monotonic()
        assert await asyncio.wait_for(ta, 5) is False
        assert time.monotonic() - cut <= RENEW_S + 1.0  # room for a loaded machine
        await asyncio.wait_for(b.became_leader.wait(), 5)
        proxy.heal()
        # the old leader campaigns again: it must stay a follower while b renews
        a.became_leader.clear()
        ta = asyncio.create_task(a.run(Lead("a", log)))
        await asyncio.sleep(1.0)
        assert not a.is_leader and b.is_leader
        assert overlaps(log) == [], log
        for t in (ta, tb):
            t.cancel()
        for t in (ta, tb):
            with contextlib.suppress(asyncio.CancelledError):
                await t


async def test_manager_that_loses_its_lease_stops_reconciling_at_once(
    server: EmbeddedServer,
) -> None:
    """A manager started with ``start()`` (not ``run()``) whose Lease is lost stops
    handing out work at the moment its renew deadline passes: the object it requeues
    every 50 ms is not reconciled again, though nobody called ``stop()``."""
    from kubewerk.client import CONFIGMAP
    from kubewerk.runtime import Manager, Result

    reconciled: list[float] = []
    async with (
        FaultProxy("127.0.0.1", server.port) as proxy,
        Client.from_url(proxy.url, retry=RetryPolicy(max_retries=0)) as ca,
        Client.from_url(server.url) as direct,
    ):
        await direct.create(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "tick"}, "data": {}}
        )
        mgr = Manager(
            ca,
            probe_port=None,
            leader_election=True,
            leader_election_id="faults3",
            leader_election_namespace="default",
            identity="a",
            lease_duration=LEASE_S,
            renew_deadline=RENEW_S,
            retry_period=0.25,
        )

        @mgr.reconciler(CONFIGMAP)
        async def tick(obj: dict[str, object], ctx: object) -> Result:
            reconciled.append(time.monotonic())
            return Result.after(0.05)

        await mgr.start()
        try:
            loop = asyncio.get_running_loop()
            end = loop.time() + 5
            while not reconciled and loop.time() < end:
                await asyncio.sleep(0.02)
            assert reconciled
            proxy.stall()
            assert mgr.elector is not None
            while mgr.elector.is_leader and loop.time() < end:
                await asyncio.sleep(0.01)
            assert not mgr.elector.is_leader
            # the manager notices within a few loop turns (the elector's task cancels
            # the leading one); from then on nothing more is reconciled
            while mgr.is_leader and loop.time() < end:
                await asyncio.sleep(0)
            lost_at = time.monotonic()
            await asyncio.sleep(0.3)
            assert [t for t in reconciled if t > lost_at] == []
        finally:
            proxy.heal()
            await mgr.stop()


class SlowLeaseReader:
    """A client stub whose lease reads take ``latency`` seconds to come back."""

    def __init__(self, lease: dict[str, object], latency: float) -> None:
        self.lease = lease
        self.latency = latency

    async def get(self, kind: object, name: str, namespace: str) -> dict[str, object]:
        await asyncio.sleep(self.latency)
        return self.lease


async def test_follower_dates_a_lease_change_from_when_the_answer_came() -> None:
    """A follower that sees the holder's record change dates the change from when the
    answer arrived, never from when it sent the read (the holder may have renewed while
    the read was on its way, so dating it earlier would expire the lease too soon), as
    client-go sets observedTime after the Get returns."""
    lease = {
        "metadata": {"resourceVersion": "7"},
        "spec": {
            "holderIdentity": "a",
            "leaseDurationSeconds": 2,
            "renewTime": "2026-01-01T00:00:00.000000Z",
            "acquireTime": "2026-01-01T00:00:00.000000Z",
            "leaseTransitions": 0,
        },
    }
    b = LeaderElector(
        SlowLeaseReader(lease, 0.3),  # type: ignore[arg-type]
        "x",
        "default",
        "b",
        lease_duration=LEASE_S,
        renew_deadline=RENEW_S,
        retry_period=0.25,
    )
    assert await b.try_acquire_or_renew() is False
    answered = time.monotonic()
    assert b.observed.time >= answered - 0.05


async def test_release_on_stop_is_bounded_while_the_server_is_unreachable(
    server: EmbeddedServer,
) -> None:
    """Stopping a leader that cannot reach the server does not hang on releasing the
    Lease: the release is given up after the renew deadline (client-go bounds it the
    same way), not after the client's 30 s request timeout."""
    async with (
        FaultProxy("127.0.0.1", server.port) as proxy,
        Client.from_url(proxy.url, retry=RetryPolicy(max_retries=0)) as ca,
    ):
        a = LeaderElector(
            ca,
            "faults4",
            "default",
            "a",
            lease_duration=LEASE_S,
            renew_deadline=RENEW_S,
            retry_period=0.25,
        )
        ta = asyncio.create_task(a.run(Lead("a", [])))
        await asyncio.wait_for(a.became_leader.wait(), 5)
        proxy.stall()
        started = time.monotonic()
        ta.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(ta, 10)
        # the renew deadline, plus room for a loaded machine; the client's timeout is 30 s
        assert time.monotonic() - started <= RENEW_S + 1.0
        assert not a.is_leader
        proxy.heal()


async def test_leader_that_sees_another_holder_stops_at_once(server: EmbeddedServer) -> None:
    """A leader whose renewal finds the Lease held by someone else (an operator forced
    it, a clock ran fast) stops leading at that moment instead of carrying on until its
    renew deadline: two leaders at once would follow otherwise."""
    log: list[tuple[float, str, str]] = []
    async with Client.from_url(server.url) as c:
        # a long renew deadline: carrying on until it would take 8 s, stopping at once
        # takes one retry period, so the bound below leaves a loaded machine room
        a = LeaderElector(
            c,
            "faults5",
            "default",
            "a",
            lease_duration=10.0,
            renew_deadline=8.0,
            retry_period=0.1,
        )
        ta = asyncio.create_task(a.run(Lead("a", log)))
        await asyncio.wait_for(a.became_leader.wait(), 5)
        lease = await c.get(LEASE, "faults5", "default")
        lease["spec"]["holderIdentity"] = "intruder"
        await c.replace(lease)
        taken = time.monotonic()
        assert await asyncio.wait_for(ta, 5) is False
        assert time.monotonic() - taken < 3.0
