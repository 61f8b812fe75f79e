"""Server-side apply of map- and set-typed lists over HTTP, as kube-apiserver answers it:
a custom resource whose schema declares ``x-kubernetes-list-type: map`` (one key, several
keys, integer and boolean keys, nested) or ``set`` has its items named by key or value
in managedFields, owned, conflicted over and removed item by item; lists without a list
type, or ``atomic``, stay one leaf. Duplicates in an applied configuration are refused
with kube's message (built-ins and custom resources); duplicates a built-in's live object
already holds are handled as structured-merge-diff handles them.

One server (in a thread) serves the whole module; each test uses its own objects."""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import AsyncIterator, Iterator
from typing import Any

import orjson
import pytest

from kubewerk.apiserver.server import EmbeddedServer
from tests.apiserver.helpers import CRD_PATH, Api

APPLY = "application/apply-patch+yaml"
GROUP = "keys.kubewerk.dev"
WIDGETS = f"/apis/{GROUP}/v1/namespaces/default/widgets"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"

STR: dict[str, Any] = {"type": "string"}
INT: dict[str, Any] = {"type": "integer"}


def _map_list(keys: list[str], props: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "array",
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": keys,
        "items": {"type": "object", "required": keys, "properties": props},
    }


SPEC: dict[str, Any] = {
    "type": "object",
    "properties": {
        "ports": _map_list(["name"], {"name": STR, "port": INT}),
        "endpoints": _map_list(
            ["port", "protocol"],
            {"port": INT, "protocol": STR, "host": STR},
        ),
        "switches": _map_list(["on"], {"on": {"type": "boolean"}, "label": STR}),
        "groups": _map_list(
            ["name"],
            {"name": STR, "members": _map_list(["id"], {"id": INT, "role": STR})},
        ),
        "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": STR},
        "plain": {"type": "array", "items": STR},
        "atomic": {"type": "array", "x-kubernetes-list-type": "atomic", "items": STR},
    },
}
CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"widgets.{GROUP}"},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": SPEC}}},
            }
        ],
    },
}


def _send(base: str, method: str, path: str, body: Any) -> Any:
    req = urllib.request.Request(
        base + path,
        data=orjson.dumps(body),
        method=method,
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read())


@pytest.fixture(scope="module")
def server() -> Iterator[EmbeddedServer]:
    """One server for the module, with the Widget CRD served."""
    srv = EmbeddedServer("memory").start_in_thread()
    try:
        _send(srv.url, "POST", CRD_PATH, CRD)
        deadline = time.monotonic() + 10
        while True:
            try:
                _send(srv.url, "GET", WIDGETS, None)
                break
            except urllib.error.HTTPError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.01)
        yield srv
    finally:
        srv.stop_thread()


@pytest.fixture
async def api(server: EmbeddedServer) -> AsyncIterator[Api]:
    client = Api(server.url)
    try:
        yield client
    finally:
        await client.close()


def widget(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "Widget",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


async def apply(api: Api, path: str, obj: dict[str, Any], query: str) -> tuple[int, Any]:
    return await api.request(
        "PATCH",
        f"{path}/{obj['metadata']['name']}?{query}",
        raw=orjson.dumps(obj),
        content_type=APPLY,
    )


def fields(obj: dict[str, Any], manager: str) -> Any:
    for entry in obj["metadata"].get("managedFields", []):
        if entry.get("manager") == manager:
            return entry["fieldsV1"]
    return None


async def test_two_managers_own_one_item_each_and_removal_follows_the_keys(api: Api) -> None:
    status, obj = await apply(
        api, WIDGETS, widget("w1", ports=[{"name": "a", "port": 1}], tags=["x"]), "fieldManager=one"
    )
    assert status == 201, obj
    status, obj = await apply(
        api, WIDGETS, widget("w1", ports=[{"name": "b", "port": 2}], tags=["y"]), "fieldManager=two"
    )
    assert status == 200, obj
    assert obj["spec"] == {
        "ports": [{"name": "a", "port": 1}, {"name": "b", "port": 2}],
        "tags": ["x", "y"],
    }
    assert fields(obj, "one") == {
        "f:spec": {
            "f:ports": {'k:{"name":"a"}': {".": {}, "f:name": {}, "f:port": {}}},
            "f:tags": {'v:"x"': {}},
        }
    }
    assert fields(obj, "two")["f:spec"]["f:ports"] == {
        'k:{"name":"b"}': {".": {}, "f:name": {}, "f:port": {}}
    }
    # another value for an item "one" owns is a conflict named by the item's key
    status, err = await apply(
        api, WIDGETS, widget("w1", ports=[{"name": "a", "port": 9}]), "fieldManager=two"
    )
    assert status == 409
    assert err["message"] == (
        'Apply failed with 1 conflict: conflict with "one": .spec.ports[name="a"].port'
    )
    # "one" applies again without its item: only that item goes, the set item stays
    status, obj = await apply(api, WIDGETS, widget("w1", tags=["x"]), "fieldManager=one")
    assert status == 200, obj
    assert obj["spec"] == {"ports": [{"name": "b", "port": 2}], "tags": ["x", "y"]}
    status, obj = await apply(api, WIDGETS, widget("w1"), "fieldManager=two")
    assert obj["spec"] == {"tags": ["x"]}


async def test_multi_key_integer_boolean_and_nested_keys(api: Api) -> None:
    config = widget(
        "w2",
        endpoints=[{"port": 80, "protocol": "TCP"}, {"port": 80, "protocol": "UDP", "host": "h"}],
        switches=[{"on": True, "label": "yes"}],
        groups=[{"name": "g", "members": [{"id": 1, "role": "r"}]}],
    )
    status, obj = await apply(api, WIDGETS, config, "fieldManager=one")
    assert status == 201, obj
    spec = fields(obj, "one")["f:spec"]
    assert list(spec["f:endpoints"]) == [
        'k:{"port":80,"protocol":"TCP"}',
        'k:{"port":80,"protocol":"UDP"}',
    ]
    assert spec["f:switches"] == {'k:{"on":true}': {".": {}, "f:label": {}, "f:on": {}}}
    assert spec["f:groups"]['k:{"name":"g"}']["f:members"] == {
        'k:{"id":1}': {".": {}, "f:id": {}, "f:role": {}}
    }
    nested = widget("w2", groups=[{"name": "g", "members": [{"id": 2, "role": "s"}]}])
    status, obj = await apply(api, WIDGETS, nested, "fieldManager=two")
    assert status == 200, obj
    assert obj["spec"]["groups"] == [
        {"name": "g", "members": [{"id": 1, "role": "r"}, {"id": 2, "role": "s"}]}
    ]
    status, err = await apply(
        api,
        WIDGETS,
        widget("w2", endpoints=[{"port": 80, "protocol": "UDP", "host": "other"}]),
        "fieldManager=two",
    )
    assert status == 409
    assert err["details"]["causes"][0]["field"] == '.spec.endpoints[port=80,protocol="UDP"].host'


@pytest.mark.parametrize("field", ["plain", "atomic"])
async def test_lists_without_a_list_type_or_atomic_are_one_leaf(api: Api, field: str) -> None:
    name = f"w3-{field}"
    status, obj = await apply(api, WIDGETS, widget(name, **{field: ["a"]}), "fieldManager=one")
    assert status == 201, obj
    assert fields(obj, "one") == {"f:spec": {f"f:{field}": {}}}
    status, err = await apply(api, WIDGETS, widget(name, **{field: ["b"]}), "fieldManager=two")
    assert status == 409
    assert err["message"] == f'Apply failed with 1 conflict: conflict with "one": .spec.{field}'
    status, obj = await apply(
        api, WIDGETS, widget(name, **{field: ["b"]}), "fieldManager=two&force=true"
    )
    assert obj["spec"][field] == ["b"]
    assert fields(obj, "one") is None


async def test_duplicates_in_a_custom_resource_configuration_are_refused(api: Api) -> None:
    config = widget(
        "w4",
        ports=[{"name": "a", "port": 1}, {"name": "a", "port": 2}],
        tags=["x", "x"],
        groups=[{"name": "g", "members": [{"id": 1}, {"id": 1}]}],
    )
    status, err = await apply(api, WIDGETS, config, "fieldManager=one")
    assert status == 400
    assert err["reason"] == "BadRequest"
    assert err["message"] == (
        "failed to create typed patch object (default/w4; keys.kubewerk.dev/v1, Kind=Widget): "
        "errors:\n"
        '  .spec.groups[name="g"].members: duplicate entries for key [id=1]\n'
        '  .spec.ports: duplicate entries for key [name="a"]\n'
        '  .spec.tags: duplicate entries for key [="x"]'
    )
    status, _ = await api.get(f"{WIDGETS}/w4")
    assert status == 404


def _deployment(name: str, env: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "image": "nginx", "env": env, **extra}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [container]},
            },
        },
    }


async def test_duplicates_in_a_built_in_configuration_are_refused_all_listed(api: Api) -> None:
    config = _deployment(
        "d1",
        [{"name": "FOO", "value": "1"}, {"name": "FOO", "value": "2"}],
        ports=[{"containerPort": 93}, {"containerPort": 93, "protocol": "TCP"}],
    )
    status, err = await apply(api, DEPLOYMENTS, config, "fieldManager=one")
    assert status == 400
    assert err["message"] == (
        "failed to create typed patch object (default/d1; apps/v1, Kind=Deployment): errors:\n"
        '  .spec.template.spec.containers[name="c"].env: duplicate entries for key '
        '[name="FOO"]\n'
        '  .spec.template.spec.containers[name="c"].ports: duplicate entries for key '
        '[containerPort=93,protocol="TCP"]'
    )


async def test_duplicates_a_live_built_in_holds(api: Api) -> None:
    live = _deployment("d2", [{"name": "FOO", "value": "1"}, {"name": "FOO", "value": "2"}])
    live["spec"]["replicas"] = 2  # "before" owns them (defaulted or not): the apply agrees
    status, obj = await api.post(f"{DEPLOYMENTS}?fieldManager=before", live)
    assert status == 201, obj
    container = fields(obj, "before")["f:spec"]["f:template"]["f:spec"]["f:containers"]
    assert container['k:{"name":"c"}']["f:env"] == {".": {}, 'k:{"name":"FOO"}': {}}
    # an apply that leaves env alone keeps both items
    status, obj = await apply(
        api, DEPLOYMENTS, {**_deployment("d2", []), "spec": {"replicas": 2}}, "fieldManager=ssa"
    )
    assert status == 200, obj
    assert [e["value"] for e in obj["spec"]["template"]["spec"]["containers"][0]["env"]] == [
        "1",
        "2",
    ]
    # applying the duplicated key takes the duplicated item from its owner: a conflict
    config = _deployment("d2", [{"name": "FOO", "value": "3"}])
    status, err = await apply(api, DEPLOYMENTS, config, "fieldManager=ssa")
    assert status == 409
    assert err["message"] == (
        'Apply failed with 1 conflict: conflict with "before" using apps/v1: '
        '.spec.template.spec.containers[name="c"].env[name="FOO"]'
    )
    status, obj = await apply(api, DEPLOYMENTS, config, "fieldManager=ssa&force=true")
    assert status == 200, obj
    assert obj["spec"]["template"]["spec"]["containers"][0]["env"] == [
        {"name": "FOO", "value": "3"}
    ]
    mine = fields(obj, "ssa")["f:spec"]["f:template"]["f:spec"]["f:containers"]
    assert mine['k:{"name":"c"}']["f:env"] == {
        'k:{"name":"FOO"}': {".": {}, "f:name": {}, "f:value": {}}
    }


async def test_an_undeclared_field_in_a_keyed_item_is_named_by_the_key(api: Api) -> None:
    config = widget(
        "w5",
        ports=[{"name": "a", "port": 1, "colour": "red"}],
        groups=[{"name": "g", "members": [{"id": 7, "rank": 1}]}],
        plain=["x"],
    )
    status, err = await apply(api, WIDGETS, config, "fieldManager=one")
    assert status == 400
    assert err["message"] == (
        "failed to create typed patch object (default/w5; keys.kubewerk.dev/v1, Kind=Widget): "
        "errors:\n"
        '  .spec.groups[name="g"].members[id=7].rank: field not declared in schema\n'
        '  .spec.ports[name="a"].colour: field not declared in schema'
    )


async def test_a_built_in_undeclared_field_names_its_item_by_keys_and_key_defaults(
    api: Api,
) -> None:
    config = _deployment("d3", [], ports=[{"containerPort": 80, "hostPortt": 1}])
    status, err = await apply(api, DEPLOYMENTS, config, "fieldManager=one")
    assert status == 400
    assert err["message"] == (
        "failed to create typed patch object (default/d3; apps/v1, Kind=Deployment): "
        '.spec.template.spec.containers[name="c"].ports[containerPort=80,protocol="TCP"]'
        ".hostPortt: field not declared in schema"
    )
