"""sync: each policy on one scenario, prune on/off, idempotence, dry run, a cluster down."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import yaml

from kubewerk.apiserver.server import EmbeddedServer
from kubewerk.client import Client, RetryPolicy
from kubewerk.sync import LAST_SYNCED_ANNOTATION, load
from kubewerk.sync.engine import SyncReport, sync
from kubewerk.sync.sources import ClusterSource

from .conftest import widget, widget_crd, write_manifests


def actions(report: SyncReport, target: int = 0) -> dict[str, str]:
    return {r.key.name: r.action for r in report.targets[target].results if r.key.kind == "Widget"}


async def spec_of(client: Client, name: str) -> dict[str, Any] | None:
    rt = await client.resolve("sync.test/v1", "Widget")
    items = (await client.list(rt, "default")).items
    found = [i for i in items if i["metadata"]["name"] == name]
    return found[0]["spec"] if found else None


def target(client: Client) -> ClusterSource:
    return ClusterSource(client.server, client, owns_client=False)


async def scenario(repo: Path, client: Client) -> None:
    """First sync from Git, then: Git changes a and c.size, removes b; the cluster changes
    a's replicas and c.size (the conflict), and someone adds a label to d."""
    write_manifests(
        repo / "w.yaml",
        widget("a", size="s", replicas=1),
        widget("b", size="s"),
        widget("c", size="s"),
        widget("d", size="s"),
    )
    first = await sync(load(str(repo)), [target(client)], "git-wins")
    assert first.ok and set(actions(first).values()) == {"created"}
    write_manifests(
        repo / "w.yaml",
        widget("a", size="m", replicas=1),
        widget("c", size="git"),
        widget("d", size="s"),
    )
    rt = await client.resolve("sync.test/v1", "Widget")
    await client.patch(rt, "a", {"spec": {"replicas": 5}}, "default", field_manager="kubectl-edit")
    await client.patch(
        rt, "c", {"spec": {"size": "cluster"}}, "default", field_manager="kubectl-edit"
    )
    await client.patch(
        rt, "d", {"metadata": {"labels": {"x": "1"}}}, "default", field_manager="kubectl-edit"
    )


async def test_git_wins(clients: list[Client], tmp_path: Path) -> None:
    client = clients[0]
    write_manifests(tmp_path / "repo" / "crd.yaml", widget_crd())
    await scenario(tmp_path / "repo", client)
    report = await sync(load(str(tmp_path / "repo")), [target(client)], "git-wins")
    assert report.ok
    assert actions(report) == {"a": "updated", "c": "updated", "d": "updated", "b": "extra"}
    assert await spec_of(client, "a") == {"size": "m", "replicas": 1}
    assert await spec_of(client, "c") == {"size": "git", "replicas": 1}
    rt = await client.resolve("sync.test/v1", "Widget")
    d = await client.get(rt, "d", "default")
    assert "labels" not in d["metadata"]  # the cluster is made equal to Git
    assert await spec_of(client, "b") is not None  # prune off: kept, reported
    pruned = await sync(load(str(tmp_path / "repo")), [target(client)], "git-wins", prune=True)
    assert actions(pruned)["b"] == "deleted"
    assert await spec_of(client, "b") is None
    again = await sync(load(str(tmp_path / "repo")), [target(client)], "git-wins", prune=True)
    assert set(actions(again).values()) == {"unchanged"}
    assert not again.changed


async def test_merge(clients: list[Client], tmp_path: Path) -> None:
    client = clients[0]
    await scenario(tmp_path / "repo", client)
    report = await sync(load(str(tmp_path / "repo")), [target(client)], "merge")
    acts = actions(report)
    assert acts["a"] == "updated" and acts["b"] == "extra" and acts["c"] == "conflict"
    # a: Git's size and the cluster's replicas (each changed on one side only)
    assert await spec_of(client, "a") == {"size": "m", "replicas": 5}
    # c: both changed size: a conflict, left as the cluster has it
    assert await spec_of(client, "c") == {"size": "cluster", "replicas": 1}
    [c] = [r for r in report.targets[0].results if r.key.name == "c"]
    assert c.conflicts == ["/spec/size"]
    rt = await client.resolve("sync.test/v1", "Widget")
    d = await client.get(rt, "d", "default")
    assert d["metadata"]["labels"] == {"x": "1"}  # the cluster's own change is kept
    again = await sync(load(str(tmp_path / "repo")), [target(client)], "merge")
    # nothing written again; the unresolved conflict is reported again
    assert {k: v for k, v in actions(again).items()} == {
        "a": "unchanged",
        "b": "extra",
        "c": "conflict",
        "d": "unchanged",
    }
    assert [r.detail for r in again.targets[0].results if r.key.name == "c"] == [
        "unchanged; kept the cluster's value"
    ]
    pruned = await sync(load(str(tmp_path / "repo")), [target(client)], "merge", prune=True)
    assert actions(pruned)["b"] == "deleted"


async def test_cluster_wins_writes_manifests(clients: list[Client], tmp_path: Path) -> None:
    client = clients[0]
    repo = tmp_path / "repo"
    await scenario(repo, client)
    await client.create(widget("e", size="new"))
    kept = await sync(load(str(repo)), [target(client)], "cluster-wins")
    assert actions(kept) == {
        "a": "written",
        "b": "written",
        "c": "written",
        "d": "written",
        "e": "written",
    }
    # b (deleted from Git) and e (made in the cluster) come back as new files
    assert (repo / "widget-default-b.yaml").exists()
    docs = [d for d in yaml.safe_load_all((repo / "w.yaml").read_text())]
    by_name = {d["metadata"]["name"]: d for d in docs}
    assert by_name["a"]["spec"] == {"size": "s", "replicas": 5}
    assert by_name["c"]["spec"]["size"] == "cluster"
    assert by_name["d"]["metadata"]["labels"] == {"x": "1"}
    assert "uid" not in by_name["a"]["metadata"] and "status" not in by_name["a"]
    assert yaml.safe_load((repo / "widget-default-e.yaml").read_text())["spec"]["size"] == "new"
    again = await sync(load(str(repo)), [target(client)], "cluster-wins")
    assert set(actions(again).values()) == {"unchanged"}
    # the cluster was never written
    rt = await client.resolve("sync.test/v1", "Widget")
    assert (await client.get(rt, "c", "default"))["spec"]["size"] == "cluster"


async def test_dry_run_writes_nothing(clients: list[Client], tmp_path: Path) -> None:
    client = clients[0]
    await scenario(tmp_path / "repo", client)
    rt = await client.resolve("sync.test/v1", "Widget")
    before = (await client.list(rt, "default")).resource_version
    report = await sync(
        load(str(tmp_path / "repo")), [target(client)], "git-wins", prune=True, dry_run=True
    )
    assert actions(report) == {"a": "updated", "b": "deleted", "c": "updated", "d": "updated"}
    assert (await client.list(rt, "default")).resource_version == before
    text = (tmp_path / "repo" / "w.yaml").read_text()
    await sync(
        load(str(tmp_path / "repo")), [target(client)], "cluster-wins", prune=True, dry_run=True
    )
    assert (tmp_path / "repo" / "w.yaml").read_text() == text


async def test_three_clusters_crd_first_and_idempotent(
    clients: list[Client], tmp_path: Path
) -> None:
    # fresh clusters without the CRD: it is created, waited for, then the widgets
    async with EmbeddedServer("memory") as bare:
        bare_client = Client.from_url(bare.url)
        repo = tmp_path / "repo"
        ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}
        write_manifests(repo / "all.yaml", widget("w", ns="team", size="m"), widget_crd(), ns)
        targets = [target(c) for c in (*clients[:2], bare_client)]
        report = await sync(load(str(repo)), targets, "git-wins")
        assert report.ok, [(t.status, t.detail, t.results) for t in report.targets]
        order = [r.key.kind for r in report.targets[2].results]
        assert order == ["Namespace", "CustomResourceDefinition", "Widget"]
        rt = await bare_client.resolve("sync.test/v1", "Widget")
        w = await bare_client.get(rt, "w", "team")
        assert w["spec"] == {"size": "m", "replicas": 1}
        assert LAST_SYNCED_ANNOTATION in w["metadata"]["annotations"]
        again = await sync(load(str(repo)), targets, "git-wins")
        assert not again.changed
        await bare_client.close()


async def test_cluster_down_mid_sync_is_reported_and_resumed(
    clients: list[Client], tmp_path: Path
) -> None:
    db = tmp_path / "down.db"
    srv = EmbeddedServer(f"sqlite:{db}")
    await srv.start()
    port = int(srv.url.rsplit(":", 1)[1])
    down = Client.from_url(
        srv.url, retry=RetryPolicy(max_retries=1, base=0.01, cap=0.02), timeout=2
    )
    repo = tmp_path / "repo"
    write_manifests(repo / "crd.yaml", widget_crd())
    write_manifests(repo / "w.yaml", *(widget(f"w{i:03}", size="m") for i in range(60)))
    stopped = asyncio.Event()
    original = down.request

    async def request(method: str, path: str, **kw: Any) -> Any:
        if method == "PATCH" and path.endswith("/w020") and not stopped.is_set():
            stopped.set()
            await srv.stop()
        return await original(method, path, **kw)

    down.request = request  # type: ignore[method-assign]
    report = await sync(load(str(repo)), [target(clients[0]), target(down)], "git-wins")
    ok, gone = report.targets
    assert ok.status == "ok" and len(ok.results) == 61
    assert gone.status == "unreachable" and "cannot reach the API server" in gone.detail
    done = [r for r in gone.results if r.key.kind == "Widget"]
    assert len(done) == 20 and {r.action for r in done} == {"created"}
    srv = EmbeddedServer(f"sqlite:{db}", port=port)
    await srv.start()
    try:
        resumed = await sync(load(str(repo)), [target(clients[0]), target(down)], "git-wins")
        assert resumed.ok
        acts = [r.action for r in resumed.targets[1].results if r.key.kind == "Widget"]
        assert acts.count("unchanged") == 20 and acts.count("created") == 40
        assert not resumed.targets[0].counts().get("created")
    finally:
        await down.close()
        await srv.stop()
