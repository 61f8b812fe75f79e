"""The real ``kubectl`` and a CRD that converts through a ``kubewerk.webhook`` conversion
server: an object applied as v1alpha1 is read as v1 (get, list) and back, losslessly."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from kubewerk.model import crd_for
from kubewerk.webhook import WebhookServer
from kubewerk.webhook.certs import make_certificates, write_certificates
from tests.webhook.models import GROUP, Database, make_app

from .conftest import KubectlRun

pytestmark = pytest.mark.e2e

CRD = f"databases.{GROUP}"


@pytest.fixture
def converter_url(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """A conversion webhook server over TLS in a thread of its own: (URL, caBundle)."""
    certs = make_certificates("convert", "default", days=2, extra_names=["127.0.0.1"])
    files = write_certificates(certs, tmp_path / "certs")
    server = WebhookServer(
        make_app(), host="127.0.0.1", port=0, cert_file=files["cert"], key_file=files["key"]
    )
    loop = asyncio.new_event_loop()
    started = threading.Event()
    stop = asyncio.Event()

    async def main() -> None:
        async with server:
            started.set()
            await stop.wait()

    thread = threading.Thread(target=loop.run_until_complete, args=(main(),), daemon=True)
    thread.start()
    assert started.wait(10)
    try:
        yield f"https://127.0.0.1:{server.port}/convert", certs.ca_bundle
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(10)
        loop.close()


def test_apply_v1alpha1_get_v1(
    kc: KubectlRun, converter_url: tuple[str, str], tmp_path: Path
) -> None:
    url, ca_bundle = converter_url
    crd = crd_for(Database)
    crd["spec"]["conversion"]["webhook"]["clientConfig"] = {"url": url, "caBundle": ca_bundle}
    kc("apply", "-f", "-", input=yaml.safe_dump(crd))
    kc("wait", "--for=condition=Established", f"crd/{CRD}", "--timeout=10s")
    manifest = {
        "apiVersion": f"{GROUP}/v1alpha1",
        "kind": "Database",
        "metadata": {"name": "orders", "namespace": "default"},
        "spec": {"engine": "postgres", "size": "20Gi"},
    }
    out = kc("apply", "-f", "-", input=yaml.safe_dump(manifest)).stdout
    assert f"database.{GROUP}/orders created" in out
    got = json.loads(kc("get", f"databases.v1.{GROUP}", "orders", "-o", "json").stdout)
    assert got["apiVersion"] == f"{GROUP}/v1"
    assert got["spec"] == {"engine": "postgres", "storageGi": 20}
    listed = json.loads(kc("get", f"databases.v1.{GROUP}", "-o", "json").stdout)
    assert [i["spec"] for i in listed["items"]] == [{"engine": "postgres", "storageGi": 20}]
    # a v1-only field survives a v1alpha1 apply (kept in an annotation there)
    kc("patch", f"databases.v1.{GROUP}", "orders", "--type=merge", "-p", '{"spec":{"replicas":3}}')
    manifest["metadata"]["labels"] = {"tier": "gold"}
    out = kc("apply", "-f", "-", input=yaml.safe_dump(manifest)).stdout
    assert f"database.{GROUP}/orders configured" in out
    got = json.loads(kc("get", f"databases.v1.{GROUP}", "orders", "-o", "json").stdout)
    assert got["spec"] == {"engine": "postgres", "storageGi": 20, "replicas": 3}
    assert got["metadata"]["labels"] == {"tier": "gold"}
    old = json.loads(kc("get", f"databases.v1alpha1.{GROUP}", "orders", "-o", "json").stdout)
    assert old["apiVersion"] == f"{GROUP}/v1alpha1"
    assert old["spec"] == {"engine": "postgres", "size": "20Gi"}
    table = kc("get", f"databases.v1alpha1.{GROUP}").stdout
    assert "orders" in table
