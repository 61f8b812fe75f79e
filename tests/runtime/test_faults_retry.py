"""429 (priority and fairness) and 5xx answers: which requests the client retries and
how long it waits (client-go's rest.Request rules), and what reaches the reconciler
(an error, retried through the work queue's rate limiter)."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from kubewerk.apiserver.server import EmbeddedServer
from kubewerk.client import CONFIGMAP, Client, RetryPolicy
from kubewerk.client.errors import InternalError, ServerUnreachable, ServiceUnavailable
from kubewerk.runtime import Manager, Result
from kubewerk.runtime.informer import Informer
from tests.runtime.faults import Fault, FaultProxy

NS = "default"


def cm(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": NS},
        "data": {"v": "1"},
    }


@pytest.fixture
async def proxy() -> AsyncIterator[FaultProxy]:
    async with (
        EmbeddedServer("memory", bookmark_interval=0.5) as srv,
        FaultProxy("127.0.0.1", srv.port) as p,
    ):
        yield p


@pytest.fixture
async def client(proxy: FaultProxy) -> AsyncIterator[Client]:
    async with Client.from_url(proxy.url, retry=RetryPolicy(max_retries=3, base=0.01)) as c:
        yield c


async def test_throttled_list_waits_retry_after_then_syncs(
    proxy: FaultProxy, client: Client
) -> None:
    """The informer's list answered 429 with Retry-After: 1 is sent again after one
    second (not sooner), and the informer syncs without an error surfacing."""
    await client.create(cm("a"))
    fault = proxy.answer(
        Fault(429, method="GET", path="/configmaps", query="limit=", retry_after="1")
    )
    inf = Informer(client, CONFIGMAP, [NS])
    started = time.monotonic()
    task = asyncio.create_task(inf.run())
    try:
        assert await inf.wait_synced(5)
        assert time.monotonic() - started >= 0.95
        assert fault.hits == 1 and "default/a" in inf
    finally:
        task.cancel()


async def test_writes_are_retried_only_when_the_server_says_when(
    proxy: FaultProxy, client: Client
) -> None:
    """client-go retries a request of any verb whose 429 or 5xx answer carries
    Retry-After, after that delay, and no write without it: a 503 without Retry-After
    on a PATCH reaches the caller after one attempt (the write may have happened)."""
    await client.create(cm("w"))
    patch = {"data": {"v": "2"}}

    proxy.answer(Fault(503, method="PATCH", path="/configmaps/w"))
    with pytest.raises(ServiceUnavailable):
        await client.patch(CONFIGMAP, "w", patch, NS)
    assert len(proxy.seen("PATCH")) == 1

    proxy.answer(Fault(500, method="PATCH", path="/configmaps/w", retry_after="0"))
    await client.patch(CONFIGMAP, "w", patch, NS)
    assert [s.injected for s in proxy.seen("PATCH")] == [503, 500, None]

    proxy.answer(Fault(429, method="POST", path="/configmaps", retry_after="0", times=2))
    await client.create(cm("w2"))
    assert [s.injected for s in proxy.seen("POST")] == [None, 429, 429, None]

    # retries run out: the last answer is what the caller gets
    proxy.answer(Fault(429, method="DELETE", retry_after="0", times=None))
    with pytest.raises(Exception, match="injected 429"):
        await client.delete(CONFIGMAP, "w2", NS)
    assert len(proxy.seen("DELETE")) == 1 + 3


async def test_failed_reconciles_back_off_through_the_work_queue(
    proxy: FaultProxy, client: Client
) -> None:
    """Writes failing with 500 (no Retry-After) surface in the reconcile as
    InternalError; the object is retried with the work queue's per-item exponential
    backoff (5 ms doubling), not in a tight loop, and once the server recovers it
    converges and its backoff is forgotten."""
    await client.create(cm("r"))
    attempts: list[float] = []
    errors: list[str] = []
    mgr = Manager(client, probe_port=None)

    @mgr.reconciler(CONFIGMAP)
    async def reconcile(obj: dict[str, Any], ctx: Any) -> Result:
        attempts.append(time.monotonic())
        try:
            await ctx.client.patch(CONFIGMAP, ctx.name, {"data": {"seen": "yes"}}, NS)
        except InternalError as exc:
            errors.append(type(exc).__name__)
            raise
        return Result()

    proxy.answer(Fault(500, method="PATCH", path="/configmaps/r", times=None))
    await mgr.start()
    try:
        await asyncio.sleep(0.7)
        failing = list(attempts)
        # 5, 10, 20, ... 320 ms: about eight attempts in 0.7 s, never a tight loop
        assert 4 <= len(failing) <= 10, len(failing)
        gaps = [b - a for a, b in itertools.pairwise(failing)]
        # the i-th retry waits at least 5 ms * 2**i (load only makes the gaps longer)
        assert all(g >= 0.005 * 2**i * 0.95 for i, g in enumerate(gaps)), gaps
        assert set(errors) == {"InternalError"}
        # every failed attempt counted (the last one may still be waiting for its answer)
        requeues = mgr.controllers[0].queue.num_requeues("default/r")
        assert requeues in (len(failing) - 1, len(failing))
        proxy.heal()
        loop = asyncio.get_running_loop()
        end = loop.time() + 5
        while loop.time() < end:
            got = await client.get(CONFIGMAP, "r", NS)
            if got["data"].get("seen") == "yes":
                break
            await asyncio.sleep(0.05)
        assert got["data"]["seen"] == "yes"
        await asyncio.sleep(0.1)
        assert mgr.controllers[0].queue.num_requeues("default/r") == 0
    finally:
        await mgr.stop()


@pytest.mark.parametrize(
    ("method", "resent"),
    [("POST", False), ("PATCH-json", False), ("PATCH-merge", True), ("PUT", True)],
)
async def test_a_write_lost_after_the_server_ran_it_is_resent_only_when_idempotent(
    proxy: FaultProxy, client: Client, method: str, resent: bool
) -> None:
    """The server runs a write, then the (reused) connection is reset before its answer
    arrives. A POST or a JSON patch is not sent again (it may have happened: a second
    create from one generateName would make a second object), as Go's net/http never
    resends a non-idempotent request; PUT and merge patches, idempotent, are resent once."""
    await client.create(cm("x"))
    await client.get(CONFIGMAP, "x", NS)  # the next request reuses this connection
    verb = method.split("-")[0]
    before = len(proxy.seen(verb))
    proxy.answer(Fault(0, method=verb, cut=True))

    async def write() -> None:
        if method == "POST":
            obj = cm("")
            obj["metadata"] = {"generateName": "g-", "namespace": NS}
            await client.create(obj)
        elif method == "PATCH-json":
            await client.patch(
                CONFIGMAP, "x", [{"op": "add", "path": "/data/j", "value": "1"}], NS, type="json"
            )
        elif method == "PATCH-merge":
            await client.patch(CONFIGMAP, "x", {"data": {"m": "1"}}, NS)
        else:
            current = await client.get(CONFIGMAP, "x", NS)
            current["data"]["p"] = "1"
            del current["metadata"]["resourceVersion"]
            await client.replace(current)

    if resent:
        await write()
    else:
        with pytest.raises(ServerUnreachable):
            await write()
    assert len(proxy.seen(verb)) - before == (2 if resent else 1)
    names = [o["metadata"]["name"] for o in (await client.list(CONFIGMAP, NS)).items]
    assert len([n for n in names if n.startswith("g-")]) == (1 if method == "POST" else 0)
