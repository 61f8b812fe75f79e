"""Real kubectl against a server holding 1,000 CRDs (issue 17): discovery, OpenAPI v3
(``explain``, the ``fieldValidation`` check of ``apply``) and a write of one kind answer
as with a handful of CRDs. Each kubectl call gets 10 s, far above what it takes (well
under a second) and far below what the per-request O(number of CRDs) paths took (the
OpenAPI index alone took ~40 s at 5,000 CRDs)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import aiohttp
import orjson
import pytest
import yaml

from kubewerk.apiserver.server import EmbeddedServer

from .conftest import KubectlRun

pytestmark = pytest.mark.e2e

CRDS = 1000
GROUP_SIZE = 20
AGG = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"


def crd(i: int) -> dict[str, Any]:
    """CRD ``i``: ``Kind<i>`` in ``g<i // 20>.many.test``, a schema with a described field."""
    group = f"g{i // GROUP_SIZE}.many.test"
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"kind{i}s.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": f"kind{i}s", "singular": f"kind{i}", "kind": f"Kind{i}"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {
                                    "type": "object",
                                    "properties": {
                                        "size": {
                                            "type": "integer",
                                            "description": f"How big kind {i} is.",
                                        }
                                    },
                                }
                            },
                        }
                    },
                }
            ],
        },
    }


async def _install(url: str) -> None:
    todo = iter(range(CRDS))
    async with aiohttp.ClientSession(url, connector=aiohttp.TCPConnector(limit=8)) as s:

        async def worker() -> None:
            for i in todo:
                async with s.post(
                    "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                    data=orjson.dumps(crd(i)),
                    headers={"content-type": "application/json"},
                ) as r:
                    assert r.status == 201, await r.text()

        await asyncio.gather(*(worker() for _ in range(8)))
        deadline = time.monotonic() + 30
        while True:
            async with s.get("/apis", headers={"accept": AGG}) as r:
                body = orjson.loads(await r.read())
            served = sum(
                len(v["resources"])
                for item in body["items"]
                if item["metadata"]["name"].endswith(".many.test")
                for v in item["versions"]
            )
            if served == CRDS:
                return
            assert time.monotonic() < deadline, f"{served} of {CRDS} CRDs served"
            await asyncio.sleep(0.05)


def test_kubectl_with_a_thousand_crds(
    kc: KubectlRun, tserver: EmbeddedServer, tmp_path: Any
) -> None:
    asyncio.run(_install(tserver.url))

    resources = kc("api-resources", "--api-group=g49.many.test", "-o", "name", timeout=30)
    assert resources.stdout.split() == sorted(f"kind{i}s.g49.many.test" for i in range(980, 1000))
    everything = kc("api-resources", "-o", "name", timeout=30).stdout.split()
    assert sum(1 for name in everything if name.endswith(".many.test")) == CRDS

    explained = kc("explain", "kind517s.g25.many.test.spec.size", timeout=30).stdout
    assert "How big kind 517 is." in explained

    manifest = tmp_path / "obj.yaml"
    obj: dict[str, Any] = {
        "apiVersion": "g25.many.test/v1",
        "kind": "Kind517",
        "metadata": {"name": "one", "namespace": "default"},
        "spec": {"size": 3, "colour": "red"},
    }
    manifest.write_text(yaml.safe_dump(obj))
    # kubectl found fieldValidation in the kind's OpenAPI v3 paths: it asks for Strict
    refused = kc("apply", "-f", str(manifest), check=False, timeout=30)
    assert refused.returncode == 1
    assert 'strict decoding error: unknown field "spec.colour"' in refused.stderr
    del obj["spec"]["colour"]
    manifest.write_text(yaml.safe_dump(obj))
    applied = kc("apply", "-f", str(manifest), timeout=30)
    assert "kind517.g25.many.test/one created" in applied.stdout
    got = kc("get", "kind517s.g25.many.test", "one", "-o", "json", timeout=30).stdout
    assert orjson.loads(got)["spec"] == {"size": 3}
