"""Every marker enforced by the API: the generated CRD posted to the embedded server.

One CRD (``Marked`` of test_model_markers, which uses every marker) is created over
HTTP; then objects that break one marker each are POSTed (or PUT, for transition
rules) and must be answered 422, while the valid object is answered 201. Version-level
markers are checked through the API too: printer columns (Table output), selectable
fields (field selectors), the status and scale subresources.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from kubewerk.apiserver.server import EmbeddedServer
from kubewerk.model import crd_for

from ..apiserver.helpers import Api
from .test_model_markers import GROUP, Marked

CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
BASE = f"/apis/{GROUP}/v1/namespaces/default/markeds"

VALID: dict[str, Any] = {
    "apiVersion": f"{GROUP}/v1",
    "kind": "Marked",
    "metadata": {"name": "ok", "namespace": "default"},
    "spec": {
        "name": "web",
        "image": "nginx",
        "replicas": 2,
        "maxReplicas": 10,
        "port": "http",
        "cpu": "500m",
        "ports": [
            {"name": "http", "number": 80},
            {"name": "http", "protocol": "UDP", "number": 80},
        ],
        "tags": ["a", "b"],
        "labels": {"k": "v"},
        "owner": "team-a",
        "frozenRef": "abc",
        "checked": 3,
        "embedded": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}},
        "template": {
            "apiVersion": f"{GROUP}/v1",
            "kind": "Template",
            "metadata": {"name": "t"},
            "spec": {"a": 1},
        },
        "freeForm": {"anything": [1, {"goes": True}]},
        "nickname": None,
    },
}


def _with(**changes: Any) -> Callable[[dict[str, Any]], None]:
    def apply(obj: dict[str, Any]) -> None:
        obj["spec"].update(changes)

    return apply


def _without(*names: str) -> Callable[[dict[str, Any]], None]:
    def apply(obj: dict[str, Any]) -> None:
        for name in names:
            obj["spec"].pop(name)

    return apply


# marker → an object breaking it (on create) and a piece of the expected message
CREATE_CASES: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "maximum": (_with(replicas=11), "should be less than or equal to 10"),
    "minimum": (_with(replicas=-1), "should be greater than or equal to 0"),
    "exclusive bounds": (_with(maxReplicas=100), "should be less than 100"),
    "multipleOf": (_with(maxReplicas=9), "multiple of 2"),
    "minLength": (_with(name=""), "spec.name"),
    "maxLength": (_with(name="a" * 64), "spec.name"),
    "pattern": (_with(name="Web"), "should match '^[a-z]+$'"),
    "required": (_without("name"), "spec.name: Required value"),
    "enum (Enum)": (_with(color="green"), 'Unsupported value: "green"'),
    "enum (Literal)": (_with(mode="medium"), 'Unsupported value: "medium"'),
    "format date-time": (_with(created="yesterday"), "spec.created"),
    "type": (_with(ratio="high"), "spec.ratio"),
    "not nullable": (_with(mode=None, replicas="3"), "spec.replicas"),
    "int-or-string": (_with(port=1.5), "spec.port"),
    "quantity pattern": (_with(cpu="lots"), "spec.cpu"),
    "embedded resource": (_with(embedded={"metadata": {"name": "x"}}), "spec.embedded"),
    "typed embedded resource": (
        _with(template={"apiVersion": f"{GROUP}/v1", "metadata": {}}),
        "spec.template.kind: Required value",
    ),
    "typed embedded resource kind": (
        _with(template={"apiVersion": "v1", "kind": "Pod"}),
        'spec.template.kind: Unsupported value: "Pod"',
    ),
    "list-map keys unique": (
        _with(ports=[{"name": "a", "number": 1}, {"name": "a", "number": 2}]),
        "Duplicate value",
    ),
    "list-map key required": (_with(ports=[{"number": 1}]), "spec.ports[0].name: Required value"),
    "set items unique": (_with(tags=["a", "a"]), "Duplicate value"),
    "minItems": (_with(tags=[]), "spec.tags"),
    "maxItems": (_with(tags=["a", "b", "c", "d", "e", "f"]), "spec.tags"),
    "maxProperties": (_with(labels={"a": "1", "b": "2", "c": "3", "d": "4"}), "spec.labels"),
    "CEL rule with reason and fieldPath": (_with(replicas=10, maxReplicas=8), "too many"),
    "CEL messageExpression": (_with(owner=""), "bad: "),
    "exactly one of": (_with(sourceRef="git"), "exactly one of the fields in [image sourceRef]"),
    "exactly one of (none)": (_without("image"), "exactly one of the fields in [image sourceRef]"),
    "at most one of": (_with(memory="1Gi"), "at most one of the fields in [cpu memory]"),
}

# marker → an update breaking it, and a piece of the expected message
UPDATE_CASES: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "immutable (required field)": (_with(name="other"), "Value is immutable"),
    "immutable (optional field changed)": (_with(frozenRef="xyz"), "frozenRef cannot change"),
    "immutable (optional field removed)": (_without("frozenRef"), "frozenRef cannot change"),
    "transition rule": (_with(checked=2), "spec.checked"),
}


@pytest.fixture
async def api() -> AsyncIterator[Api]:
    async with EmbeddedServer("memory") as srv:
        client = Api(srv.url)
        try:
            status, body = await client.post(CRD_PATH, crd_for(Marked))
            assert status == 201, body
            for _ in range(100):  # wait until the CRD is established and served
                status, _ = await client.get(BASE)
                if status == 200:
                    break
                await asyncio.sleep(0.02)
            assert status == 200
            yield client
        finally:
            await client.close()


def _named(obj: dict[str, Any], name: str) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    out["metadata"]["name"] = name
    return out


async def test_valid_object_is_created_with_defaults(api: Api) -> None:
    obj = copy.deepcopy(VALID)
    obj["spec"]["notAField"] = 1
    obj["spec"]["freeForm"]["deep"] = {"kept": True}
    obj["spec"]["anything"] = [1, "two"]
    status, body = await api.post(BASE, obj, headers={"Content-Type": "application/json"})
    assert status == 201, body
    assert body["spec"]["color"] == "red"  # default from the Python default
    assert body["spec"]["ports"][0]["protocol"] == "TCP"  # default inside a list-map item
    assert body["spec"]["nickname"] is None  # nullable keeps its null
    assert "notAField" not in body["spec"]  # pruned
    assert body["spec"]["freeForm"]["deep"] == {"kept": True}  # preserved
    assert body["spec"]["anything"] == [1, "two"]
    parsed = Marked.from_dict(body)
    assert parsed.spec.name == "web"
    assert parsed.to_dict()["spec"] == body["spec"]


async def test_deprecated_version_warns(api: Api) -> None:
    async with api.session.get(api.base + BASE) as resp:
        assert resp.status == 200
        assert resp.headers.getall("Warning", []) == ['299 - "use v2"']


@pytest.mark.parametrize("case", sorted(CREATE_CASES))
async def test_marker_is_enforced_on_create(api: Api, case: str) -> None:
    mutate, expected = CREATE_CASES[case]
    obj = _named(VALID, "bad")
    mutate(obj)
    status, body = await api.post(BASE, obj)
    assert status == 422, (case, body)
    assert body["reason"] == "Invalid"
    assert expected in body["message"], (case, body["message"])


@pytest.mark.parametrize("case", sorted(UPDATE_CASES))
async def test_transition_marker_is_enforced_on_update(api: Api, case: str) -> None:
    status, created = await api.post(BASE, _named(VALID, "upd"))
    assert status == 201, created
    mutate, expected = UPDATE_CASES[case]
    changed = copy.deepcopy(created)
    mutate(changed)
    status, body = await api.put(f"{BASE}/upd", changed)
    assert status == 422, (case, body)
    assert expected in body["message"], (case, body["message"])
    # an update that leaves the guarded fields alone passes
    fine = copy.deepcopy(created)
    fine["spec"]["replicas"] = 3
    status, body = await api.put(f"{BASE}/upd", fine)
    assert status == 200, body


async def test_printer_columns_selectable_fields_and_subresources(api: Api) -> None:
    status, body = await api.post(BASE, VALID)
    assert status == 201, body
    status, other = await api.post(
        BASE, {**_named(VALID, "other"), "spec": {**VALID["spec"], "owner": "team-b"}}
    )
    assert status == 201, other

    status, table = await api.get(
        BASE, headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}
    )
    assert status == 200, table
    names = [c["name"] for c in table["columnDefinitions"]]
    assert names[:1] == ["Name"] and {"Replicas", "Ready", "Age"} <= set(names)

    status, selected = await api.get(f"{BASE}?fieldSelector=spec.owner%3Dteam-b")
    assert status == 200, selected
    assert [i["metadata"]["name"] for i in selected["items"]] == ["other"]
    status, refused = await api.get(f"{BASE}?fieldSelector=spec.color%3Dred")
    assert status == 400, refused

    with_status = copy.deepcopy(body)
    with_status["status"] = {"readyReplicas": 2, "selector": "app=web"}
    status, updated = await api.put(f"{BASE}/ok/status", with_status)
    assert status == 200, updated
    assert updated["status"]["readyReplicas"] == 2

    status, scale = await api.get(f"{BASE}/ok/scale")
    assert status == 200, scale
    assert scale["kind"] == "Scale" and scale["spec"]["replicas"] == 2
