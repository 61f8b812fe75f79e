"""``GET /metrics`` of the embedded server: kube-apiserver's names, labels and buckets."""

from __future__ import annotations

import asyncio

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from kubewerk.apiserver.metrics import REQUEST_BUCKETS
from kubewerk.apiserver.server import EmbeddedServer
from tests.apiserver.helpers import Api, configmap

CMS = "/api/v1/namespaces/default/configmaps"

Samples = dict[str, list[tuple[dict[str, str], float]]]


async def scrape(api: Api) -> Samples:
    async with api.session.get(api.base + "/metrics") as resp:
        assert resp.status == 200
        assert resp.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
        text = await resp.text()
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples.setdefault(sample.name, []).append((sample.labels, sample.value))
    return samples


def value(samples: Samples, name: str, **labels: str) -> float:
    found = [
        v
        for got, v in samples.get(name, [])
        if all(got.get(k) == want for k, want in labels.items())
    ]
    assert len(found) == 1, (name, labels, samples.get(name))
    return found[0]


async def test_requests_are_counted_with_kube_apiserver_labels(aserver: EmbeddedServer) -> None:
    api = Api(aserver.url)
    try:
        assert (await api.post(CMS, configmap("m1")))[0] == 201
        for _ in range(3):  # the second and third come from the read cache
            assert (await api.get(f"{CMS}/m1"))[0] == 200
        assert (await api.get(CMS))[0] == 200
        assert (await api.get(f"{CMS}/nope"))[0] == 404
        assert (await api.patch(f"{CMS}/m1?dryRun=All", {"data": {"a": "b"}}))[0] == 200
        assert (await api.delete(f"{CMS}?labelSelector=x%3Dy"))[0] == 200
        assert (await api.get("/apis"))[0] == 200
        samples = await scrape(api)
    finally:
        await api.close()
    common = {
        "group": "",
        "version": "v1",
        "resource": "configmaps",
        "subresource": "",
        "component": "apiserver",
    }
    total = "apiserver_request_total"
    assert (
        value(samples, total, verb="POST", code="201", scope="namespace", dry_run="", **common) == 1
    )
    assert value(samples, total, verb="GET", code="200", scope="resource", **common) == 3
    assert value(samples, total, verb="GET", code="404", scope="resource", **common) == 1
    assert value(samples, total, verb="LIST", code="200", scope="namespace", **common) == 1
    assert value(samples, total, verb="PATCH", code="200", dry_run="All", **common) == 1
    assert value(samples, total, verb="DELETECOLLECTION", code="200", **common) == 1
    assert (
        value(samples, total, verb="GET", code="200", resource="", group="", version="") == 1
    )  # /apis
    # the histogram: kube-apiserver's buckets, cumulative, count equal to the requests
    buckets = [
        (labels, v)
        for labels, v in samples["apiserver_request_duration_seconds_bucket"]
        if labels["verb"] == "GET" and labels["resource"] == "configmaps"
    ]
    assert [labels["le"] for labels, _ in buckets] == [
        *(str(float(b)) for b in REQUEST_BUCKETS),
        "+Inf",
    ]
    assert [v for _, v in buckets] == sorted(v for _, v in buckets)
    assert (
        buckets[-1][1]
        == 4
        == value(
            samples,
            "apiserver_request_duration_seconds_count",
            verb="GET",
            resource="configmaps",
            scope="resource",
        )
    )
    assert value(samples, "apiserver_storage_objects", resource="configmaps") == 1
    assert value(samples, "apiserver_resource_objects", group="", resource="configmaps") == 1
    assert value(samples, "apiserver_storage_objects", resource="namespaces") == 4
    assert value(samples, "kubewerk_storage_revision") >= 1
    assert "process_resident_memory_bytes" in samples


async def test_watches_are_long_running_and_counted_when_they_end(aserver: EmbeddedServer) -> None:
    api = Api(aserver.url)
    try:
        async with (
            aiohttp.ClientSession() as session,
            session.get(aserver.url + CMS + "?watch=true&timeoutSeconds=30") as stream,
        ):
            assert stream.status == 200
            for _ in range(100):
                samples = await scrape(api)
                running = [
                    v
                    for labels, v in samples.get("apiserver_longrunning_requests", [])
                    if labels["verb"] == "WATCH" and labels["resource"] == "configmaps"
                ]
                if running == [1]:
                    break
                await asyncio.sleep(0.01)
            assert running == [1]
            assert (
                value(samples, "apiserver_current_inflight_requests", request_kind="readOnly") == 1
            )  # the scrape
        for _ in range(100):
            samples = await scrape(api)
            if not [
                labels
                for labels, _ in samples.get("apiserver_longrunning_requests", [])
                if labels["verb"] == "WATCH"
            ]:
                break
            await asyncio.sleep(0.01)
        assert (
            value(
                samples, "apiserver_request_total", verb="WATCH", resource="configmaps", code="200"
            )
            == 1
        )
    finally:
        await api.close()


async def test_compactions_and_history_are_reported() -> None:
    async with EmbeddedServer("memory", retain_events=2) as srv:
        api = Api(srv.url)
        try:
            for i in range(5):
                assert (await api.post(CMS, configmap(f"c{i}")))[0] == 201
            before = await scrape(api)
            srv.store.compact_by_policy()
            after = await scrape(api)
        finally:
            await api.close()
    assert (
        value(after, "kubewerk_storage_compactions_total")
        == value(before, "kubewerk_storage_compactions_total") + 1
    )
    assert value(after, "kubewerk_storage_history_events") == 2
    assert value(after, "kubewerk_storage_compacted_events_total") > 0
    assert value(after, "kubewerk_storage_history_bytes") > 0
