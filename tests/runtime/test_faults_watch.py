"""Informers under watch faults: silent streams, 410 Gone, 429 on watch, a server that
comes back with another store. Each runs an informer through :class:`FaultProxy`
against an embedded server (one per test: each test breaks or replaces it)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from kubewerk.apiserver.server import EmbeddedServer
from kubewerk.client import CONFIGMAP, Client, RetryPolicy
from kubewerk.runtime.informer import Informer
from tests.runtime.faults import Fault, FaultProxy

NS = "default"


def cm(name: str, value: str = "1") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": NS},
        "data": {"v": value},
    }


class Recorder:
    """Handler that records (type, name, data value) per event."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def on_add(self, obj: dict[str, Any]) -> None:
        self.events.append(("add", obj["metadata"]["name"], obj["data"]["v"]))

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self.events.append(("update", new["metadata"]["name"], new["data"]["v"]))

    def on_delete(self, obj: dict[str, Any]) -> None:
        self.events.append(("delete", obj["metadata"]["name"], obj["data"]["v"]))


@pytest.fixture
async def server() -> AsyncIterator[EmbeddedServer]:
    async with EmbeddedServer("memory", bookmark_interval=0.2) as srv:
        yield srv


@pytest.fixture
async def proxy(server: EmbeddedServer) -> AsyncIterator[FaultProxy]:
    async with FaultProxy("127.0.0.1", server.port) as p:
        yield p


@pytest.fixture
async def direct(server: EmbeddedServer) -> AsyncIterator[Client]:
    async with Client.from_url(server.url) as c:
        yield c


@contextlib.asynccontextmanager
async def running(proxy: FaultProxy, **options: Any) -> AsyncIterator[tuple[Informer, Recorder]]:
    """An informer on ConfigMaps in NS through ``proxy``, synced, with a recorder."""
    async with Client.from_url(proxy.url, retry=RetryPolicy(max_retries=2, base=0.05)) as c:
        inf = Informer(c, CONFIGMAP, [NS], **options)
        rec = Recorder()
        inf.add_handler(rec)
        task = asyncio.create_task(inf.run())
        try:
            assert await inf.wait_synced(5)
            yield inf, rec
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


async def eventually(cond: Any, timeout: float = 5.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not cond():
        if loop.time() > end:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.02)


def list_requests(proxy: FaultProxy) -> int:
    return sum(
        1
        for s in proxy.seen("GET", "/configmaps")
        if "watch=" not in s.target and s.injected is None
    )


async def test_silent_watch_is_noticed_by_the_idle_timeout(
    proxy: FaultProxy, direct: Client
) -> None:
    """A watch whose connection goes silent without closing (half-open TCP) is given
    up after ``watch_idle_timeout`` without data (the server sends bookmarks every
    0.2 s here) and resumed from its resourceVersion on a new connection: no relist."""
    await direct.create(cm("a"))
    async with running(proxy, watch_idle_timeout=0.6) as (inf, rec):
        await asyncio.sleep(0.3)  # the watch is open
        proxy.stall(new=False)  # the open watch connection goes silent; new ones work
        lists = list_requests(proxy)
        await direct.create(cm("b"))
        await eventually(lambda: "default/b" in inf, 4.0)
        assert list_requests(proxy) == lists  # resumed, not relisted
        assert rec.events == [("add", "a", "1"), ("add", "b", "1")]


async def test_watch_whose_answer_never_comes_is_given_up(
    proxy: FaultProxy, direct: Client
) -> None:
    """A watch request that is accepted and never answered (black hole) is bounded by
    the same idle timeout, then retried."""
    async with running(proxy, watch_idle_timeout=0.5) as (inf, _):
        proxy.mode = "blackhole"
        proxy.reset_all()  # the watch reconnects into the black hole
        await asyncio.sleep(0.8)
        proxy.mode = "forward"
        await direct.create(cm("late"))
        await eventually(lambda: "default/late" in inf, 4.0)


async def test_410_on_watch_relists_and_reports_each_change_once(
    proxy: FaultProxy, direct: Client
) -> None:
    """410 Gone on the watch: relist; the cache equals the server afterwards; objects
    deleted meanwhile are reported deleted once, changed ones updated once, and
    unchanged ones not at all."""
    for name in ("keep", "change", "drop"):
        await direct.create(cm(name))
    async with running(proxy, watch_idle_timeout=5) as (inf, rec):
        rec.events.clear()
        proxy.stall()
        await direct.patch(CONFIGMAP, "change", {"data": {"v": "2"}}, NS)
        await direct.delete(CONFIGMAP, "drop", NS)
        await direct.create(cm("new"))
        proxy.answer(Fault(410, method="GET", path="/configmaps", query="watch=", times=1))
        proxy.reset_all()
        proxy.resume()
        await eventually(
            lambda: sorted(inf.keys()) == ["default/change", "default/keep", "default/new"]
        )
        await asyncio.sleep(0.3)
        assert sorted(rec.events) == [
            ("add", "new", "1"),
            ("delete", "drop", "1"),
            ("update", "change", "2"),
        ]
        assert inf.get("change", NS)["data"] == {"v": "2"}  # type: ignore[index]


async def test_429_on_watch_backs_off_and_resumes_without_relisting(
    proxy: FaultProxy, direct: Client
) -> None:
    """429 on the watch request (priority and fairness) is retried from the same
    resourceVersion after Retry-After, as client-go's reflector does
    (isWatchErrorRetriable): no relist."""
    async with running(proxy, watch_idle_timeout=5) as (inf, _):
        lists = list_requests(proxy)
        fault = proxy.answer(
            Fault(429, method="GET", path="/configmaps", query="watch=", retry_after="0", times=3)
        )
        proxy.reset_all()
        await direct.create(cm("after429"))
        await eventually(lambda: "default/after429" in inf)
        assert fault.hits == 3
        assert list_requests(proxy) == lists


async def test_server_back_with_another_store_drops_what_it_lacks(
    proxy: FaultProxy, direct: Client, server: EmbeddedServer
) -> None:
    """The server restarts with a different, younger store (every resourceVersion lower
    than the informer's): the resumed watch is answered 'Too large resource version',
    the informer relists, and objects the new store lacks are deleted from the cache."""
    for i in range(5):
        await direct.create(cm(f"old{i}"))
    async with running(proxy, watch_idle_timeout=5) as (inf, rec):
        old_rv = int(inf.resource_version)
        async with EmbeddedServer("memory", bookmark_interval=0.2) as fresh:
            async with Client.from_url(fresh.url) as c2:
                await c2.create(cm("old0", "fresh"))
                await c2.create(cm("fresh"))
                assert int((await c2.list(CONFIGMAP, NS)).resource_version) < old_rv
            proxy.upstream = ("127.0.0.1", fresh.port)
            proxy.reset_all()
            await eventually(lambda: sorted(inf.keys()) == ["default/fresh", "default/old0"])
            assert inf.get("old0", NS)["data"] == {"v": "fresh"}  # type: ignore[index]
            assert int(inf.resource_version) < old_rv
            deleted = sorted(n for t, n, _ in rec.events if t == "delete")
            assert deleted == ["old1", "old2", "old3", "old4"]


async def test_410_on_a_list_page_restarts_the_list(proxy: FaultProxy, direct: Client) -> None:
    """The informer lists without a resourceVersion (a consistent read), so the only
    410 a list can get is an expired ``continue`` token: the list starts again from the
    first page, and the informer syncs with every object exactly once."""
    for i in range(5):
        await direct.create(cm(f"p{i}"))
    fault = proxy.answer(Fault(410, method="GET", path="/configmaps", query="continue="))
    async with running(proxy, page_size=2) as (inf, rec):
        assert fault.hits == 1
        assert sorted(n for _, n, _ in rec.events) == [f"p{i}" for i in range(5)]
        assert len(inf) == 5
    first_pages = [s for s in proxy.seen("GET", "/configmaps") if "continue=" not in s.target]
    assert not any("resourceVersion=" in s.target for s in first_pages if "watch=" not in s.target)
