"""Context.patch_status reads a typed object's status without dumping the whole object."""

from __future__ import annotations

from typing import Any

from kubewerk.client.resources import to_dict
from kubewerk.runtime import conditions
from kubewerk.runtime.controller import status_of
from tests.client.models import Widget, WidgetStatus


def _widget(status: dict[str, Any] | None = None) -> Widget:
    data: dict[str, Any] = {
        "apiVersion": "test.kubewerk.dev/v1",
        "kind": "Widget",
        "metadata": {
            "name": "w",
            "namespace": "default",
            "uid": "u",
            "resourceVersion": "3",
            "generation": 2,
            "labels": {"a": "b"},
        },
        "spec": {"size": 3},
    }
    if status is not None:
        data["status"] = status
    return Widget.model_validate(data)


def test_status_of_matches_the_full_dump() -> None:
    cases: list[Any] = [_widget(), _widget({})]
    read = _widget({"phase": "Ready", "observedSize": 3})
    cases.append(read)
    changed = read.model_copy(deep=True)
    assert changed.status is not None
    changed.status.phase = "Pending"
    changed.status.observed_size = None
    cases.append(changed)
    cleared = read.model_copy(deep=True)
    cleared.status = None
    cases.append(cleared)
    fresh = _widget()
    fresh.status = WidgetStatus()
    conditions.set_condition(fresh, "Ready", True, "Done", "ok")
    cases.append(fresh)
    for obj in cases:
        assert status_of(obj) == to_dict(obj).get("status")
    plain = to_dict(read)
    assert status_of(plain) is plain["status"]
