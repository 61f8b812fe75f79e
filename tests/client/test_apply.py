"""The client's server-side apply against the embedded API server: typed models and
dicts, no-op re-apply, conflicts in kube's words, force, /status."""

from __future__ import annotations

from typing import Any

import pytest

from kubewerk.client import CONFIGMAP, Client, Conflict, ResourceType
from tests.client.models import Widget

WIDGETS = ResourceType("test.kubewerk.dev", "v1", "Widget", "widgets")


def intent(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "test.kubewerk.dev/v1",
        "kind": "Widget",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


def managers(obj: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(e["manager"], e.get("subresource", "")): e for e in obj["metadata"]["managedFields"]}


async def test_apply_creates_then_noop_keeps_resource_version(client: Client) -> None:
    created = await client.apply(intent("a", size=3), field_manager="alice")
    assert created["spec"] == {"size": 3}
    entry = managers(created)[("alice", "")]
    assert entry["operation"] == "Apply"
    assert entry["fieldsV1"]["f:spec"] == {"f:size": {}}
    again = await client.apply(intent("a", size=3), field_manager="alice")
    assert again["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    stored = await client.get(WIDGETS, "a", "default")
    assert stored["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


async def test_apply_typed_model_sends_only_set_fields(client: Client) -> None:
    w = Widget.model_validate({"metadata": {"name": "t", "namespace": "default"}, "spec": {}})
    w.spec.color = "red"
    got = await client.apply(w, field_manager="painter")
    assert isinstance(got, Widget)
    assert got.spec.color == "red"
    raw = await client.get(WIDGETS, "t", "default")
    # size (a model default) was never sent, so the painter does not own it
    assert managers(raw)[("painter", "")]["fieldsV1"]["f:spec"] == {"f:color": {}}


async def test_apply_removes_fields_the_manager_stops_applying(client: Client) -> None:
    await client.apply(intent("r", size=2, color="blue"), field_manager="alice")
    after = await client.apply(intent("r", size=2), field_manager="alice")
    assert after["spec"] == {"size": 2}


async def test_conflict_is_409_with_kubes_message_and_force_takes_over(client: Client) -> None:
    await client.apply(intent("c", size=1), field_manager="alice")
    with pytest.raises(Conflict) as err:
        await client.apply(intent("c", size=5), field_manager="bob")
    assert err.value.code == 409
    assert err.value.message == 'Apply failed with 1 conflict: conflict with "alice": .spec.size'
    assert [(c.reason, c.field) for c in err.value.causes] == [
        ("FieldManagerConflict", ".spec.size")
    ]
    unchanged = await client.get(WIDGETS, "c", "default")
    assert unchanged["spec"] == {"size": 1}
    forced = await client.apply(intent("c", size=5), field_manager="bob", force=True)
    assert forced["spec"] == {"size": 5}
    owners = managers(forced)
    assert owners[("bob", "")]["fieldsV1"]["f:spec"] == {"f:size": {}}
    # alice lost the field she owned alone, so her entry is gone
    assert ("alice", "") not in owners


async def test_same_value_is_shared_not_a_conflict(client: Client) -> None:
    await client.apply(intent("s", size=4), field_manager="alice")
    shared = await client.apply(intent("s", size=4), field_manager="bob")
    owners = managers(shared)
    assert owners[("alice", "")]["fieldsV1"] == owners[("bob", "")]["fieldsV1"]


async def test_apply_to_status(client: Client) -> None:
    await client.apply(intent("st", size=1), field_manager="alice")
    body = {
        "apiVersion": "test.kubewerk.dev/v1",
        "kind": "Widget",
        "metadata": {"name": "st", "namespace": "default"},
        "spec": {"size": 99},
        "status": {"phase": "Ready"},
    }
    got = await client.apply(body, field_manager="status-writer", subresource="status")
    assert got["status"] == {"phase": "Ready"}
    assert got["spec"] == {"size": 1}  # /status ignores everything but status
    entry = managers(got)[("status-writer", "status")]
    assert entry["operation"] == "Apply"
    assert "f:status" in entry["fieldsV1"] and "f:spec" not in entry["fieldsV1"]


async def test_apply_to_status_of_missing_object_is_404(client: Client) -> None:
    from kubewerk.client import NotFound

    with pytest.raises(NotFound):
        await client.apply(
            {**intent("nope"), "status": {"phase": "x"}},
            field_manager="w",
            subresource="status",
        )


async def test_apply_dry_run_writes_nothing(client: Client) -> None:
    from kubewerk.client import NotFound

    preview = await client.apply(intent("d", size=2), field_manager="alice", dry_run=True)
    assert preview["spec"] == {"size": 2}
    with pytest.raises(NotFound):
        await client.get(WIDGETS, "d", "default")


async def test_apply_builtin_namespace_from_argument(client: Client) -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"a": "1"}}
    got = await client.apply(cm, field_manager="alice", namespace="kube-system")
    assert got["metadata"]["namespace"] == "kube-system"
    assert (await client.get(CONFIGMAP, "cm", "kube-system"))["data"] == {"a": "1"}


async def test_user_mistakes_raise_before_sending(client: Client) -> None:
    with pytest.raises(ValueError, match="field_manager"):
        await client.apply(intent("x"), field_manager="")
    with pytest.raises(ValueError, match=r"metadata\.name"):
        await client.apply({"apiVersion": "v1", "kind": "ConfigMap"}, field_manager="m")
