"""Hostile bodies and parameters against the embedded server, over HTTP, on both stores.

Each case is one of issue 10's findings: what used to crash the server, poison a whole
resource (every LIST answering 500 afterwards), or be accepted from a web page. After
every refused write the resource must still list, watch and read back intact.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from kubewerk.apiserver import decode
from kubewerk.apiserver.app import ApiServer
from kubewerk.apiserver.server import EmbeddedServer
from kubewerk.apiserver.storage.memory import MemoryStore
from tests.apiserver.helpers import CRD_PATH, Api, asgi_call

GV = "limits.kubewerk.dev/v1"
THINGS = f"/apis/{GV}/namespaces/default/things"
CMS = "/api/v1/namespaces/default/configmaps"

FREE_FORM_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "things.limits.kubewerk.dev"},
    "spec": {
        "group": "limits.kubewerk.dev",
        "scope": "Namespaced",
        "names": {
            "plural": "things",
            "singular": "thing",
            "kind": "Thing",
            "listKind": "ThingList",
        },
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "x-kubernetes-preserve-unknown-fields": True,
                            },
                        },
                    }
                },
            }
        ],
    },
}


@pytest.fixture(params=["memory", "sqlite"])
async def api(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Api]:
    spec = "memory" if request.param == "memory" else f"sqlite:{tmp_path / 'db.sqlite'}"
    async with EmbeddedServer(spec, bookmark_interval=0.5) as srv:
        client = Api(srv.url)
        try:
            status, body = await client.post(CRD_PATH, FREE_FORM_CRD)
            assert status == 201, body
            for _ in range(500):
                status, _ = await client.get(f"/apis/{GV}")
                if status == 200:
                    break
                await asyncio.sleep(0.01)
            status, body = await client.post(THINGS, thing("seed", {"a": 1}))
            assert status == 201, body
            yield client
        finally:
            await client.close()


def thing(name: str, spec: Any) -> dict[str, Any]:
    return {"apiVersion": GV, "kind": "Thing", "metadata": {"name": name}, "spec": spec}


def nested(levels: int, leaf: Any = "x") -> Any:
    value = leaf
    for _ in range(levels):
        value = {"a": value}
    return value


async def fails(
    api: Api, method: str, path: str, code: int, contains: str, **kw: Any
) -> dict[str, Any]:
    status, body = await api.request(method, path, **kw)
    assert status == code, (status, body)
    assert body["kind"] == "Status" and body["code"] == code, body
    assert contains in body["message"], body["message"]
    return body


async def assert_resource_intact(api: Api, names: set[str]) -> None:
    """LIST, a watch from the start and GET of each object all answer, with exactly ``names``."""
    status, body = await api.get(THINGS)
    assert status == 200, body
    assert {item["metadata"]["name"] for item in body["items"]} == names
    status, body = await api.get(f"/apis/{GV}/things")  # cluster-wide
    assert status == 200, body
    events = await api.watch(
        f"{THINGS}?watch=true&resourceVersion=0&timeoutSeconds=1", stop_after=len(names)
    )
    assert {e["object"]["metadata"]["name"] for e in events} == names
    for name in names:
        status, body = await api.get(f"{THINGS}/{name}")
        assert status == 200, body


# -- YAML aliases ("billion laughs") --------------------------------------------------------


def laughs(levels: int, fanout: int = 10) -> bytes:
    text = "apiVersion: limits.kubewerk.dev/v1\nkind: Thing\nmetadata:\n  name: lol\nspec:\n"
    text += "  l0: &l0 [" + ", ".join(["lol"] * fanout) + "]\n"
    for level in range(1, levels):
        text += f"  l{level}: &l{level} [" + ", ".join([f"*l{level - 1}"] * fanout) + "]\n"
    return text.encode()


async def test_billion_laughs_is_refused_quickly_and_stores_nothing(api: Api) -> None:
    for levels in (4, 7, 8, 9):
        body = laughs(levels)
        assert len(body) < 700
        started = time.perf_counter()
        await fails(
            api,
            "POST",
            THINGS,
            400,
            "document contains excessive aliasing",
            raw=body,
            content_type="application/yaml",
        )
        assert time.perf_counter() - started < 1.0
    await assert_resource_intact(api, {"seed"})


async def test_modest_aliases_are_expanded_into_independent_copies(api: Api) -> None:
    status, body = await api.post(THINGS, None, raw=laughs(3), content_type="application/yaml")
    assert status == 201, body
    assert body["spec"]["l2"] == [[["lol"] * 10] * 10] * 10
    doc = (
        b"apiVersion: limits.kubewerk.dev/v1\nkind: Thing\nmetadata: {name: shared}\n"
        b"spec:\n  a: &x {k: v}\n  b: *x\n"
    )
    status, body = await api.post(THINGS, None, raw=doc, content_type="application/yaml")
    assert status == 201, body
    status, body = await api.patch(f"{THINGS}/shared", {"spec": {"a": {"k": "changed"}}})
    assert status == 200, body
    assert body["spec"] == {"a": {"k": "changed"}, "b": {"k": "v"}}
    await assert_resource_intact(api, {"seed", "lol", "shared"})


async def test_an_anchor_that_contains_itself_is_refused(api: Api) -> None:
    doc = (
        b"apiVersion: limits.kubewerk.dev/v1\nkind: Thing\n"
        b"metadata: {name: loop}\nspec: &s {me: *s}\n"
    )
    await fails(
        api, "POST", THINGS, 400, "value contains itself", raw=doc, content_type="application/yaml"
    )
    await assert_resource_intact(api, {"seed"})


# -- nesting ---------------------------------------------------------------------------------


async def test_nesting_at_the_limit_is_stored_and_reads_back(api: Api) -> None:
    # the object and 99 levels of spec below it: exactly MAX_DEPTH
    deepest = thing("deep", nested(decode.MAX_DEPTH - 1))
    status, body = await api.post(THINGS, deepest)
    assert status == 201, body
    status, body = await api.get(f"{THINGS}/deep")
    assert status == 200 and body["spec"] == deepest["spec"], body
    # the same in lists, which the issue found add levels too
    listy: Any = "x"
    for _ in range(decode.MAX_DEPTH - 2):
        listy = [listy]
    status, body = await api.post(THINGS, thing("deep-list", {"v": listy}))
    assert status == 201, body
    await assert_resource_intact(api, {"seed", "deep", "deep-list"})


def nested_text(name: str, levels: int) -> bytes:
    """A Thing whose spec nests ``levels`` objects, written out (the encoder stops at 254)."""
    return (
        b'{"apiVersion": "limits.kubewerk.dev/v1", "kind": "Thing", "metadata": {"name": "'
        + name.encode()
        + b'"}, "spec": '
        + b'{"a": ' * levels
        + b'"x"'
        + b"}" * levels
        + b"}"
    )


@pytest.mark.parametrize("levels", [decode.MAX_DEPTH, 252, 300, 1100, 5000])
async def test_deeper_bodies_are_refused_as_json_and_yaml(api: Api, levels: int) -> None:
    await fails(
        api,
        "POST",
        THINGS,
        400,
        "nests deeper than 100 levels",
        raw=nested_text("too-deep", levels),
    )
    # JSON is YAML; libyaml itself stops at 1000 levels with its own error
    await fails(
        api,
        "POST",
        THINGS,
        400,
        "nests deeper than 100 levels" if levels < 1000 else "nesting depth",
        raw=nested_text("too-deep", levels),
        content_type="application/yaml",
    )
    await fails(
        api,
        "PUT",
        f"{THINGS}/seed",
        400,
        "nests deeper than 100 levels",
        raw=nested_text("seed", levels),
    )
    await assert_resource_intact(api, {"seed"})


async def test_patches_cannot_nest_an_object_too_deep(api: Api) -> None:
    await fails(
        api,
        "PATCH",
        f"{THINGS}/seed",
        400,
        "nests deeper than 100 levels",
        raw=b'{"spec": ' + b'{"a": ' * 300 + b"1" + b"}" * 301,
        content_type="application/merge-patch+json",
    )
    await fails(
        api,
        "PATCH",
        f"{THINGS}/seed",
        400,
        "nests deeper than 100 levels",
        body={"spec": nested(100)},
        content_type="application/merge-patch+json",
    )
    # JSON patch: each copy of /spec/n into itself, 35 levels down, nests it 35 levels deeper
    deep_path = "/spec/n" + "/a" * 35
    ops: list[dict[str, Any]] = [
        {"op": "add", "path": "/spec/n", "value": nested(40)},
        {"op": "copy", "from": "/spec/n", "path": deep_path},
        {"op": "copy", "from": "/spec/n", "path": deep_path},
    ]
    await fails(
        api,
        "PATCH",
        f"{THINGS}/seed",
        400,
        "the patched object nests deeper",
        body=ops,
        content_type="application/json-patch+json",
    )
    await assert_resource_intact(api, {"seed"})
    _, body = await api.get(f"{THINGS}/seed")
    assert body["spec"] == {"a": 1}


# -- numbers -----------------------------------------------------------------------------------


async def test_integers_outside_int64_become_floats_as_kubernetes_reads_them(api: Api) -> None:
    doc = (
        b"apiVersion: limits.kubewerk.dev/v1\nkind: Thing\nmetadata: {name: big}\n"
        b"spec:\n  u64: 18446744073709551615\n  beyond: 123456789012345678901234567890\n"
        b"  huge: 1" + b"0" * 400 + b"\n  fits: 9223372036854775807\n"
    )
    status, body = await api.post(THINGS, None, raw=doc, content_type="application/yaml")
    assert status == 201, body
    spec = body["spec"]
    assert spec["u64"] == 1.8446744073709552e19 and isinstance(spec["u64"], float)
    assert spec["beyond"] == 1.2345678901234568e29
    assert spec["huge"] == "1" + "0" * 400  # no int64, uint64 or float64 holds it: a string
    assert spec["fits"] == 9223372036854775807
    raw = (
        b'{"apiVersion": "limits.kubewerk.dev/v1", "kind": "Thing", "metadata": {"name": "big2"}, '
        b'"spec": {"n": 9223372036854775808, "m": -9223372036854775809}}'
    )
    status, body = await api.post(THINGS, None, raw=raw)
    assert status == 201, body
    # float64s, written back as Go writes them: 2**63 as the digits 9223372036854776000
    # (gonumbers.as_stored), -2**63 (digits outside int64 and uint64) as a float
    assert body["spec"] == {"n": 9223372036854776000, "m": -9.223372036854776e18}
    await assert_resource_intact(api, {"seed", "big", "big2"})


async def test_nan_and_infinity_are_refused(api: Api) -> None:
    for value in (b".nan", b".NaN", b".inf", b"-.Inf"):
        doc = (
            b"apiVersion: limits.kubewerk.dev/v1\nkind: Thing\nmetadata: {name: nan}\nspec: {v: "
            + value
            + b"}\n"
        )
        await fails(
            api,
            "POST",
            THINGS,
            400,
            "json: unsupported value",
            raw=doc,
            content_type="application/yaml",
        )
    raw = (
        b'{"apiVersion": "limits.kubewerk.dev/v1", "kind": "Thing", '
        b'"metadata": {"name": "inf"}, "spec": {"v": 1e400}}'
    )
    await fails(api, "POST", THINGS, 400, "cannot unmarshal number 1e400", raw=raw)
    await fails(
        api,
        "PATCH",
        f"{THINGS}/seed",
        400,
        "cannot unmarshal number 1e400",
        raw=b'{"spec": {"v": 1e400}}',
        content_type="application/merge-patch+json",
    )
    await assert_resource_intact(api, {"seed"})


async def test_yaml_values_are_read_as_kubernetes_reads_them(api: Api) -> None:
    doc = (
        b"apiVersion: limits.kubewerk.dev/v1\nkind: Thing\nmetadata: {name: typed}\nspec:\n"
        b"  port: 22:22\n  date: 2001-12-14\n  1: one\n  true: yes\n  bin: !!binary aGVsbG8=\n"
        b"  set: !!set {a, b}\n  custom: !mine value\n  octal: 0777\n"
    )
    status, body = await api.post(THINGS, None, raw=doc, content_type="application/yaml")
    assert status == 201, body
    assert body["spec"] == {
        "port": "22:22",
        "date": "2001-12-14",
        "1": "one",
        "true": True,
        "bin": "hello",
        "set": {"a": None, "b": None},
        "custom": "value",
        "octal": 511,
    }
    await assert_resource_intact(api, {"seed", "typed"})


# -- content types ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "ctype",
    [
        "text/plain",
        "text/plain;charset=UTF-8",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "*/*",
    ],
)
async def test_bodies_a_web_page_can_send_without_preflight_are_refused(
    api: Api, ctype: str
) -> None:
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "planted"},
        "stringData": {"k": "v"},
    }
    await fails(
        api,
        "POST",
        "/api/v1/namespaces/default/secrets",
        415,
        "accepted media types include",
        body=secret,
        content_type=ctype,
    )
    await fails(
        api,
        "PUT",
        f"{THINGS}/seed",
        415,
        "accepted media types include",
        body=thing("seed", {}),
        content_type=ctype,
    )
    status, _ = await api.get("/api/v1/namespaces/default/secrets/planted")
    assert status == 404


async def test_a_body_without_content_type_is_read_as_json(api: Api) -> None:
    async with api.session.post(
        api.base + CMS,
        data=orjson.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "plain"}}),
        skip_auto_headers=["Content-Type"],
    ) as resp:
        assert resp.status == 201, await resp.text()


# -- Host ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "host",
    [
        "attacker.example",
        "attacker.example:8001",
        "localhost.attacker.example",
        "127.0.0.1.nip.io",
        "0.0.0.0:8001",
        "10.1.2.3",
    ],
)
async def test_foreign_host_names_are_refused(api: Api, host: str) -> None:
    for method, path, body in (
        ("GET", CMS, None),
        ("POST", CMS, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "rebound"}}),
    ):
        status, answer = await api.request(method, path, body, headers={"Host": host})
        assert status == 403, answer
        assert answer["reason"] == "Forbidden" and "--allow-host" in answer["message"], answer
    status, _ = await api.get(f"{CMS}/rebound")
    assert status == 404


@pytest.mark.parametrize(
    "host",
    [
        "localhost",
        "localhost:8001",
        "LocalHost.",
        "app.localhost:1",
        "127.0.0.1:9",
        "127.8.9.10",
        "[::1]:8001",
    ],
)
async def test_loopback_host_names_are_answered(api: Api, host: str) -> None:
    status, body = await api.request("GET", CMS, headers={"Host": host})
    assert status == 200, body


async def test_allowed_hosts_extend_loopback() -> None:
    app = ApiServer(MemoryStore(), allowed_hosts=["dev.box", "10.0.0.5"])
    for host, code in (
        ("dev.box:8001", 200),
        ("DEV.BOX.", 200),
        ("10.0.0.5:1", 200),
        ("other.box", 403),
    ):
        status, _, payload = await asgi_call(app, "GET", CMS, headers={"host": host})
        assert status == code, payload
    for allowed in (["*"], None):
        app = ApiServer(MemoryStore(), allowed_hosts=allowed)
        status, _, payload = await asgi_call(app, "GET", CMS, headers={"host": "anything.example"})
        assert status == 200, payload


# -- query parameters ---------------------------------------------------------------------------


async def test_limit_parses_as_int64(api: Api) -> None:
    status, body = await api.get(f"{THINGS}?limit=9223372036854775807")
    assert status == 200, body
    assert [i["metadata"]["name"] for i in body["items"]] == ["seed"] and "continue" not in body[
        "metadata"
    ]
    for bad in ("9223372036854775808", "1e3", "1.5", "nan", "٣"):
        await fails(api, "GET", f"{THINGS}?limit={bad}", 400, "strconv.ParseInt")


@pytest.mark.parametrize("timeout", ["nan", "inf", "1e400", "1.5", "-inf", "x"])
async def test_watch_timeout_parses_as_int64(api: Api, timeout: str) -> None:
    await fails(
        api, "GET", f"{THINGS}?watch=true&timeoutSeconds={timeout}", 400, "strconv.ParseInt"
    )


async def test_watch_with_a_negative_timeout_ends_at_once(api: Api) -> None:
    started = time.perf_counter()
    async with api.session.get(api.base + f"{THINGS}?watch=true&timeoutSeconds=-5") as resp:
        assert resp.status == 200
        await resp.read()
    assert time.perf_counter() - started < 2


async def test_delete_options_are_type_checked(api: Api) -> None:
    await fails(
        api,
        "DELETE",
        f"{THINGS}/seed?gracePeriodSeconds=abc",
        400,
        'strconv.ParseInt: parsing "abc": invalid syntax',
    )
    await fails(
        api,
        "DELETE",
        f"{THINGS}/seed?gracePeriodSeconds=99999999999999999999",
        400,
        "value out of range",
    )
    await fails(
        api,
        "DELETE",
        f"{THINGS}/seed",
        400,
        "json: cannot unmarshal string into Go struct field "
        "DeleteOptions.gracePeriodSeconds of type int64",
        body={"gracePeriodSeconds": "abc"},
    )
    await fails(
        api,
        "DELETE",
        f"{THINGS}/seed",
        400,
        "DeleteOptions.propagationPolicy",
        body={"propagationPolicy": 3},
    )
    await fails(
        api,
        "DELETE",
        f"{THINGS}/seed",
        400,
        "DeleteOptions.preconditions.uid",
        body={"preconditions": {"uid": 5}},
    )
    await assert_resource_intact(api, {"seed"})
    # a body wins over the query, as in kube-apiserver's delete handler
    status, body = await api.delete(
        f"{THINGS}/seed?gracePeriodSeconds=abc", {"gracePeriodSeconds": 0}
    )
    assert status == 200, body


async def test_the_storage_boundary_backs_the_decoding_limits_up(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Were the request-side limit ever above what can be written back, the store refuses
    the object (400, nothing stored) instead of poisoning the resource."""
    monkeypatch.setattr(decode, "MAX_DEPTH", 1000)
    await fails(
        api, "POST", THINGS, 400, "too deep to be written back", raw=nested_text("poison", 252)
    )
    await fails(
        api,
        "PATCH",
        f"{THINGS}/seed",
        400,
        "too deep to be written back",
        raw=b'{"spec": ' + b'{"a": ' * 252 + b"1" + b"}" * 253,
        content_type="application/merge-patch+json",
    )
    await assert_resource_intact(api, {"seed"})
