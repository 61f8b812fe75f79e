"""ctx.apply and ctx.apply_status: a small controller that writes its child and its
status by server-side apply, against the embedded API server."""

from __future__ import annotations

from typing import Any

import pytest

from kubewerk.client import CONFIGMAP, Client, Conflict, ResourceType
from kubewerk.runtime import Context, Manager, Result
from kubewerk.runtime.helpers import AlreadyOwnedError, apply_owned
from tests.client.models import Widget, WidgetStatus

MANAGER = "widget-applier"
_WIDGETS = ResourceType("test.kubewerk.dev", "v1", "Widget", "widgets")


def widget(name: str, size: int) -> dict[str, Any]:
    return {
        "apiVersion": "test.kubewerk.dev/v1",
        "kind": "Widget",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"size": size},
    }


def build(writes: list[bool]) -> Manager:
    mgr = Manager(probe_port=None)

    @mgr.reconciler(Widget, owns=[CONFIGMAP])
    async def reconcile(w: Widget, ctx: Context) -> Result:
        await ctx.apply(
            w,
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": f"{w.name}-config"},
                "data": {"size": str(w.spec.size)},
            },
            field_manager=MANAGER,
        )
        w.status = WidgetStatus(observed_size=w.spec.size, phase="Ready")
        writes.append(await ctx.apply_status(w, field_manager=MANAGER))
        return Result()

    return mgr


def entry(obj: dict[str, Any], manager: str, subresource: str = "") -> dict[str, Any] | None:
    for e in obj["metadata"].get("managedFields") or []:
        if e["manager"] == manager and e.get("subresource", "") == subresource:
            return e
    return None


async def test_controller_applies_child_and_status(
    kube_client: Client, install_crds, run_manager, wait_for
) -> None:  # type: ignore[no-untyped-def]
    await install_crds(Widget)
    owner = await kube_client.create(widget("w", 2))
    writes: list[bool] = []
    await run_manager(build(writes))

    async def child_size(size: str) -> dict[str, Any] | None:
        try:
            cm = await kube_client.get(CONFIGMAP, "w-config", "default")
        except Exception:
            return None
        return cm if cm.get("data", {}).get("size") == size else None

    cm = await wait_for(lambda: child_size("2"), 10)
    ref = cm["metadata"]["ownerReferences"][0]
    assert ref["uid"] == owner["metadata"]["uid"] and ref["controller"] is True
    applied = entry(cm, MANAGER)
    assert applied is not None and applied["operation"] == "Apply"
    assert "f:ownerReferences" in applied["fieldsV1"]["f:metadata"]

    async def status_written() -> Widget | None:
        got = await kube_client.get(Widget, "w", "default")
        return got if got.status and got.status.observed_size == 2 else None

    await wait_for(status_written, 10)
    raw = await kube_client.get(_WIDGETS, "w", "default")
    status_entry = entry(raw, MANAGER, "status")
    assert status_entry is not None and status_entry["operation"] == "Apply"
    assert writes[0] is True

    # someone else edits the child: the controller takes its field back (force) and
    # leaves the other manager's own key alone
    await kube_client.patch(
        CONFIGMAP,
        "w-config",
        {"data": {"size": "tampered", "extra": "x"}},
        "default",
        field_manager="intruder",
    )
    cm = await wait_for(lambda: child_size("2"), 10)
    assert cm["data"]["extra"] == "x"

    # a reconcile that changes nothing writes nothing (apply_status answers False)
    n = len(writes)
    rv = cm["metadata"]["resourceVersion"]
    await kube_client.patch(
        _WIDGETS, "w", {"metadata": {"labels": {"poke": "1"}}}, "default", field_manager="poker"
    )

    async def reconciled_again() -> bool:
        return len(writes) > n

    await wait_for(reconciled_again, 10)
    assert writes[-1] is False
    cm = await kube_client.get(CONFIGMAP, "w-config", "default")
    assert cm["metadata"]["resourceVersion"] == rv

    # a spec change flows into child and status
    await kube_client.patch(_WIDGETS, "w", {"spec": {"size": 5}}, "default")
    await wait_for(lambda: child_size("5"), 10)


async def test_apply_owned_without_force_conflicts_and_refuses_second_controller(
    kube_client: Client, install_crds
) -> None:  # type: ignore[no-untyped-def]
    await install_crds(Widget)
    owner = await kube_client.create(widget("o", 1))
    child = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "1"}}
    got = await apply_owned(kube_client, owner, child, field_manager="a")
    assert got["metadata"]["namespace"] == "default"
    assert "ownerReferences" not in child["metadata"]  # the caller's dict is left alone
    await kube_client.patch(CONFIGMAP, "c", {"data": {"k": "2"}}, "default", field_manager="b")
    with pytest.raises(Conflict):
        await apply_owned(kube_client, owner, child, field_manager="a", force=False)
    other = await kube_client.create(widget("other", 1))
    foreign = {
        **child,
        "metadata": {
            "name": "c",
            "ownerReferences": [
                {
                    "apiVersion": "test.kubewerk.dev/v1",
                    "kind": "Widget",
                    "name": "other",
                    "uid": other["metadata"]["uid"],
                    "controller": True,
                }
            ],
        },
    }
    with pytest.raises(AlreadyOwnedError):
        await apply_owned(kube_client, owner, foreign, field_manager="a")
