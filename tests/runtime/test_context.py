"""Context: the snapshot decoded lazily from the cache's bytes, and patch_status sending
the smallest status merge patch (guarded by resourceVersion), or nothing."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from kubewerk.client import ResourceType
from kubewerk.runtime.controller import Context, Controller
from kubewerk.runtime.helpers import merge_patch_diff

WIDGET = ResourceType("example.dev", "v1", "Widget", "widgets")


class FakeClient:
    def __init__(self) -> None:
        self.patches: list[tuple[str, Any, str | None, str | None]] = []

    async def patch(
        self,
        rt: ResourceType,
        name: str,
        body: Any,
        namespace: str | None = None,
        *,
        subresource: str | None = None,
    ) -> Any:
        self.patches.append((name, body, namespace, subresource))
        written = {
            "apiVersion": "example.dev/v1",
            "kind": "Widget",
            "metadata": {"name": name, "namespace": namespace, "resourceVersion": "8"},
        }
        if isinstance(body.get("status"), dict):
            written["status"] = body["status"]
        return written


async def _reconcile(obj: Any, ctx: Any) -> None:
    return None


def context(status: Any, *, raw: bool = True) -> tuple[Context, FakeClient, dict[str, Any]]:
    client = FakeClient()
    ctrl: Controller[Any] = Controller("widget", WIDGET, _reconcile)
    ctrl.client = client  # type: ignore[assignment]
    ctrl.cache = None  # type: ignore[assignment]
    ctrl.recorder = None  # type: ignore[assignment]
    obj: dict[str, Any] = {
        "apiVersion": "example.dev/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": "ns", "resourceVersion": "7"},
        "spec": {"a": 1},
    }
    if status is not None:
        obj["status"] = status
    stored = orjson.dumps(obj)
    ctx = Context(ctrl, "ns/w", stored if raw else orjson.loads(stored))
    return ctx, client, orjson.loads(stored)


@pytest.mark.parametrize("raw", [True, False])
async def test_snapshot_reads_the_stored_object_and_is_a_copy(raw: bool) -> None:
    ctx, _, obj = context({"phase": "A"}, raw=raw)
    assert (ctx.namespace, ctx.name) == ("ns", "w")
    snap = ctx.snapshot
    assert snap == obj
    snap["status"]["phase"] = "changed"
    assert ctx.snapshot == obj


CASES: list[tuple[Any, Any]] = [
    (None, None),
    ({}, {}),
    ({"phase": "A", "n": 1}, {"phase": "A", "n": 1}),
    ({"phase": "A", "n": 1}, {"phase": "A", "n": 1.0}),  # int vs float: written
    (None, {"observed": 3}),
    ({"observed": 3}, None),
    ({"observed": 3}, {}),
    ({"observed": 3, "deep": {"x": 1, "y": [1, 2]}}, {"observed": 4, "deep": {"x": 1, "y": [1]}}),
    ({"a": 1}, {"a": 1, "b": None}),
    ("junk", {"a": 1}),
    ({"a": 1}, "junk"),
]


@pytest.mark.parametrize(("old", "new"), CASES)
async def test_patch_status_sends_the_wrapped_merge_patch_or_nothing(old: Any, new: Any) -> None:
    ctx, client, obj = context(old)
    if new is None:
        obj.pop("status", None)
    else:
        obj["status"] = new
    want = merge_patch_diff({"status": old}, {"status": new})
    wrote = await ctx.patch_status(obj)
    assert wrote is bool(want)
    if not want:
        assert client.patches == []
        return
    assert client.patches == [("w", {"metadata": {"resourceVersion": "7"}, **want}, "ns", "status")]
    assert obj["metadata"]["resourceVersion"] == "8"
    assert ctx.snapshot["metadata"]["resourceVersion"] == "8"


async def test_metadata_refreshed_after_a_write_is_the_reconciles_own() -> None:
    """Editing obj["metadata"] after patch_status must not edit the snapshot that
    ensure_finalizer diffs against (else the finalizer write would be skipped)."""
    ctx, _, obj = context({"observed": 1})
    obj["status"] = {"observed": 2}
    assert await ctx.patch_status(obj)
    obj["metadata"]["finalizers"] = ["example.dev/cleanup"]
    assert "finalizers" not in ctx.snapshot["metadata"]


async def test_removing_a_finalizer_from_an_object_already_gone_is_done() -> None:
    """The cache can be a step behind a deletion that completed: the patch answers 404,
    and the finalizer is as removed as it can be."""
    from kubewerk.client.errors import NotFound

    ctx, client, _ = context(None)
    ctx._snapshot["metadata"]["finalizers"] = ["example.dev/cleanup"]

    async def gone(*args: Any, **kwargs: Any) -> Any:
        raise NotFound(404, "NotFound", 'widgets.example.dev "w" not found', {})

    client.patch = gone  # type: ignore[method-assign]
    assert await ctx.remove_finalizer({}, "example.dev/cleanup") is True
