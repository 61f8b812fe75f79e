"""``sync --prune`` when a kind leaves the source, and what ``--dry-run`` says of objects
whose namespace or kind the same sync would create first.

One server for the module; namespaces are made by a client (not synced: a synced
Namespace would be another test's to prune), each test works in its own.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubewerk.apiserver.server import EmbeddedServer
from kubewerk.cli import main
from kubewerk.client import Client
from kubewerk.client.errors import NotFound
from kubewerk.testing import install_crds

from .conftest import (
    bare,
    configmap,
    make_namespace,
    served,
    widget_crd,
    widget_like_crd,
    write_manifests,
)


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    async def prepare(server: EmbeddedServer) -> None:
        async with Client.from_url(server.url) as c:
            await install_crds(c, widget_crd())
            for ns in ("p1", "p1-other", "p2"):
                await make_namespace(c, ns)

    with served(prepare) as server:
        yield server.url


def exists(url: str, api_version: str, kind: str, name: str, ns: str) -> bool:
    async def get() -> bool:
        async with Client.from_url(url) as c:
            try:
                await c.get(await c.resolve(api_version, kind), name, ns or None)
            except NotFound:
                return False
            return True

    return asyncio.run(get())


def test_prune_deletes_the_last_object_of_a_kind_in_the_namespaces_synced(
    url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The source's last ConfigMap removed: --prune still deletes the one a sync made
    (kubectl's allowlist of kinds), in the namespaces the source writes to only."""
    repo, other = tmp_path / "repo", tmp_path / "other"
    write_manifests(repo / "a.yaml", configmap("cm"), bare("Widget", "w", size="m"))
    write_manifests(other / "a.yaml", configmap("cm"))
    assert main(["sync", "--from", str(repo), "--to", url, "-n", "p1"]) == 0
    assert main(["sync", "--from", str(other), "--to", url, "-n", "p1-other"]) == 0
    capsys.readouterr()
    write_manifests(repo / "a.yaml", bare("Widget", "w", size="m"))
    argv = ["sync", "--from", str(repo), "--to", url, "-n", "p1", "--prune"]
    assert main([*argv, "--dry-run"]) == 0
    assert "  deleted   ConfigMap p1/cm" in capsys.readouterr().out.splitlines()
    assert exists(url, "v1", "ConfigMap", "cm", "p1")
    assert main(argv) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"{url}: ok (1 deleted, 1 unchanged)",
        "  deleted   ConfigMap p1/cm",
    ]
    assert not exists(url, "v1", "ConfigMap", "cm", "p1")
    assert exists(url, "v1", "ConfigMap", "cm", "p1-other")  # not a namespace synced
    assert main(argv) == 0
    assert capsys.readouterr().out.splitlines() == [f"{url}: ok (1 unchanged)"]


def thing(name: str) -> dict[str, Any]:
    return {"apiVersion": "prune.test/v1", "kind": "Thing", "metadata": {"name": name}}


def test_prune_deletes_the_last_custom_resource_of_a_crd_in_the_source(
    url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = tmp_path / "repo"
    write_manifests(repo / "crd.yaml", widget_like_crd("prune.test", "Thing"))
    write_manifests(repo / "t.yaml", thing("t"))
    assert main(["sync", "--from", str(repo), "--to", url, "-n", "p2"]) == 0
    (repo / "t.yaml").unlink()
    capsys.readouterr()
    assert main(["sync", "--from", str(repo), "--to", url, "-n", "p2", "--prune"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"{url}: ok (1 deleted, 1 unchanged)",
        "  deleted   Thing.prune.test p2/t",
    ]
    assert not exists(url, "prune.test/v1", "Thing", "t", "p2")


def test_dry_run_says_what_is_created_first_and_fails_what_would_fail(
    url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A dry run cannot create a namespace or a CRD before the objects that need them:
    such an object is ``created`` with the reason; one whose namespace the sync does
    not create fails, as the sync would."""
    crd = widget_like_crd("dry.test", "Gizmo")
    gizmo = {"apiVersion": "dry.test/v1", "kind": "Gizmo", "metadata": {"name": "g"}}
    repo = tmp_path / "repo"
    write_manifests(
        repo / "a.yaml",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "p3"}},
        crd,
        configmap("cm", "p3"),
        configmap("cm", "nowhere"),
        {**gizmo, "metadata": {"name": "g", "namespace": "p3"}},
    )
    assert main(["sync", "--from", str(repo), "--to", url, "--dry-run", "-o", "json"]) == 1
    [report] = json.loads(capsys.readouterr().out)["targets"]
    assert report["status"] == "failed"
    got = {o["object"]: (o["action"], o["detail"]) for o in report["objects"]}
    assert {k: v for k, v in got.items() if v[0] != "extra"} == {  # extra: other tests'
        "Namespace p3": ("created", ""),
        "CustomResourceDefinition.apiextensions.k8s.io gizmos.dry.test": ("created", ""),
        "ConfigMap p3/cm": (
            "created",
            'dry run: namespaces "p3" not found (its namespace p3 is created first)',
        ),
        "Gizmo.dry.test p3/g": (
            "created",
            'dry run: no matches for kind "Gizmo" in version "dry.test/v1" '
            "(its CRD is created first)",
        ),
        "ConfigMap nowhere/cm": ("failed", 'namespaces "nowhere" not found'),
    }
    assert not exists(url, "v1", "Namespace", "p3", "")
