"""Quantities with absurd exponents or digit counts reach the server as cheap, bounded
values (capped at 2**63 - 1, rounded to nanos, as ParseQuantity keeps them): in a Pod's
resources (typed defaults, validation, the QoS class) and in a CEL rule's quantity()."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import pytest

from kubewerk.apiserver.server import EmbeddedServer
from tests.apiserver.helpers import Api

PODS = "/api/v1/namespaces/default/pods"


@pytest.fixture
async def api(aserver: EmbeddedServer) -> AsyncIterator[Api]:
    client = Api(aserver.url)
    try:
        yield client
    finally:
        await client.close()


@pytest.mark.parametrize(
    ("cpu", "stored"),
    [
        ("1e999999999", "9223372036854775807"),
        ("1e10000", "9223372036854775807"),
        ("1e-999999999", "1e-3"),  # DecimalExponent keeps its form
        ("1" * 5000, "9223372036854775807"),
    ],
)
async def test_a_pod_with_an_absurd_cpu_limit_is_answered_at_once(
    api: Api, cpu: str, stored: str
) -> None:
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"generateName": "q-"},
        "spec": {
            "containers": [{"name": "c", "image": "busybox", "resources": {"limits": {"cpu": cpu}}}]
        },
    }
    started = time.perf_counter()
    status, pod = await api.post(PODS, body)
    assert time.perf_counter() - started < 2
    assert status == 201, pod
    resources = pod["spec"]["containers"][0]["resources"]
    assert resources["limits"]["cpu"] == stored
    assert resources["requests"]["cpu"] == stored  # requests default to the limits
    assert pod["status"]["qosClass"] == "Burstable"
