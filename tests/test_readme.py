"""The README's claims that can drift from the code."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_every_path_in_where_things_are_exists() -> None:
    text = (ROOT / "README.md").read_text()
    section = text.split("### Where things are", 1)[1].split("\n## ", 1)[0]
    paths = re.findall(r"`(src/kubewerk/[^`]+)`", section)
    assert len(paths) > 20
    missing = [p for p in paths if not (ROOT / p).exists()]
    assert not missing, missing


async def test_the_servers_feature_list_matches_what_it_answers() -> None:
    """README: protobuf bodies work for built-in kinds; server-side apply works and every
    write keeps managedFields. Checked against the server itself."""
    from kubewerk.apiserver.app import ApiServer
    from kubewerk.apiserver.storage.memory import MemoryStore
    from tests.apiserver.helpers import asgi_call
    from tests.apiserver.test_protobuf import envelope, meta

    text = (ROOT / "README.md").read_text()
    assert "protobuf request bodies for the built-in kinds" in text
    assert "`kubectl apply --server-side` works; every write keeps `managedFields`" in text
    assert "Not yet: server-side apply" not in text
    app = ApiServer(MemoryStore())
    cms = "/api/v1/namespaces/default/configmaps"
    body = envelope("v1", "ConfigMap", meta("from-protobuf"))
    status, _, payload = await asgi_call(
        app, "POST", cms, headers={"content-type": "application/vnd.kubernetes.protobuf"}, body=body
    )
    assert status == 201, payload
    status, _, payload = await asgi_call(
        app,
        "PATCH",
        f"{cms}/from-protobuf",
        "fieldManager=me",
        headers={"content-type": "application/apply-patch+yaml"},
        body=b"{apiVersion: v1, kind: ConfigMap, metadata: {name: from-protobuf}, data: {a: b}}",
    )
    assert status == 200, payload
    status, _, payload = await asgi_call(app, "GET", f"{cms}/from-protobuf")
    assert status == 200 and b'"manager":"me","operation":"Apply"' in payload
