"""No write can poison a resource: whatever the server accepts, it can read back.

Hypothesis writes random deep, large and odd values (integers far outside int64, floats at
the edges, unicode, nesting around the depth limit, YAML with anchors, tags and odd
scalars) into a free-form custom resource through create (JSON and YAML), update and
every patch type, and into a ConfigMap through a strategic merge patch. After every
request, answered or refused, the server must answer below 500, and every object of the
resource must come back intact from GET, LIST (namespaced and cluster-wide) and a
WATCH from the start — equal to what its last successful write answered. Runs on both
stores, in process over ASGI.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubewerk.apiserver import decode
from kubewerk.apiserver.app import ApiServer
from kubewerk.apiserver.storage import open_store
from tests.apiserver.helpers import asgi_call
from tests.apiserver.test_decoding_limits import FREE_FORM_CRD, GV, THINGS

CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
CMS = "/api/v1/namespaces/default/configmaps"
NAMES = ["a", "b", "c"]

leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**63), -(2**63) - 1, 10**30]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0.0, -0.0, 5e-324, 1.7976931348623157e308, 1e21, 0.1]),
    st.text(max_size=12),
    st.text(max_size=3).map(lambda s: s * 2000),
)
json_values = st.recursive(
    leaves,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=30,
)


@st.composite
def deep_values(draw: st.DrawFn) -> Any:
    """A random value wrapped in levels of objects and arrays: around the limit, or around
    the 252 levels that once poisoned a resource."""
    value = draw(json_values)
    for _ in range(draw(st.integers(85, 110) | st.integers(245, 270))):
        value = [value] if draw(st.booleans()) else {draw(st.text(max_size=2)): value}
    return value


values = st.one_of(json_values, json_values, deep_values())
# odd YAML: anchors and aliases, tags, and scalars Go and PyYAML read differently
yaml_scalars = st.sampled_from(
    [
        ".nan",
        ".inf",
        "-.Inf",
        "1e400",
        "0x1F",
        "0o17",
        "0777",
        "09",
        "22:22",
        "2001-12-14",
        "y",
        "n",
        "yes",
        "off",
        "~",
        "null",
        "!!binary aGVsbG8=",
        "!!str 5",
        "!mine x",
        "18446744073709551616",
        "1_000",
        "'quoted'",
        "!!float 1",
        "!!int 3.5",
        "!!set {a, b}",
        "&anchor 1",
        "*anchor",
        "[*anchor, *anchor]",
    ]
)


@st.composite
def yaml_specs(draw: st.DrawFn) -> str:
    keys = draw(
        st.lists(
            st.sampled_from(["a", "b", "1", "true", "c d", "<<"]),
            min_size=1,
            max_size=4,
            unique=True,
        )
    )
    lines = [f"  {key if key != 'c d' else repr(key)}: {draw(yaml_scalars)}" for key in keys]
    if draw(st.booleans()):
        lines.insert(0, "  anchored: &anchor {k: v}")
    return "spec:\n" + "\n".join(lines) + "\n"


@st.composite
def writes(draw: st.DrawFn) -> tuple[str, str, str, bytes]:
    """One write: method, path, content type, body."""
    name = draw(st.sampled_from(NAMES))
    kind = draw(
        st.sampled_from(
            ["create", "create-yaml", "odd-yaml", "update", "merge", "json-patch", "strategic"]
        )
    )
    if kind == "strategic":
        data = draw(
            st.dictionaries(
                st.text(max_size=8).filter(lambda k: k.isalnum()), st.text(max_size=20), max_size=3
            )
        )
        return (
            "PATCH",
            f"{CMS}/cm",
            "application/strategic-merge-patch+json",
            json.dumps({"data": data}).encode(),
        )
    if kind == "odd-yaml":
        text = f"apiVersion: {GV}\nkind: Thing\nmetadata:\n  name: {name}\n" + draw(yaml_specs())
        return "POST", THINGS, "application/yaml", text.encode()
    value = draw(values)
    obj = {"apiVersion": GV, "kind": "Thing", "metadata": {"name": name}, "spec": {"v": value}}
    if kind == "create":
        return "POST", THINGS, "application/json", json.dumps(obj).encode()
    if kind == "create-yaml":
        return "POST", THINGS, "application/yaml", json.dumps(obj).encode()  # JSON is YAML
    if kind == "update":
        return "PUT", f"{THINGS}/{name}", "application/json", json.dumps(obj).encode()
    if kind == "merge":
        return (
            "PATCH",
            f"{THINGS}/{name}",
            "application/merge-patch+json",
            json.dumps({"spec": {"v": value}}).encode(),
        )
    ops = [{"op": "add", "path": "/spec/v", "value": value}]
    if draw(st.booleans()):
        ops.append(
            {
                "op": "copy",
                "from": "/spec",
                "path": "/spec/v" if not isinstance(value, dict) else "/spec/w",
            }
        )
    return "PATCH", f"{THINGS}/{name}", "application/json-patch+json", json.dumps(ops).encode()


async def call(
    app: ApiServer, method: str, path: str, query: str = "", ctype: str = "", body: bytes = b""
) -> tuple[int, bytes]:
    status, _, payload = await asgi_call(
        app, method, path, query, headers={"content-type": ctype, "host": "127.0.0.1"}, body=body
    )
    assert status < 500, payload[:400]
    return status, payload


async def assert_readable(app: ApiServer, expected: dict[str, Any]) -> None:
    """Every Thing reads back from GET, LIST and WATCH exactly as its last write answered."""
    status, payload = await call(app, "GET", THINGS)
    assert status == 200, payload[:400]
    listed = {item["metadata"]["name"]: item for item in orjson.loads(payload)["items"]}
    assert set(listed) == set(expected)
    status, payload = await call(app, "GET", f"/apis/{GV}/things")
    assert status == 200, payload[:400]
    status, payload = await call(
        app, "GET", THINGS, "watch=true&resourceVersion=0&timeoutSeconds=5"
    )
    assert status == 200
    watched = {
        event["object"]["metadata"]["name"]: event["object"]
        for event in map(orjson.loads, payload.splitlines())
    }
    assert set(watched) == set(expected)
    for name, obj in expected.items():
        status, payload = await call(app, "GET", f"{THINGS}/{name}")
        assert status == 200, payload[:400]
        assert orjson.loads(payload) == obj == listed[name] == watched[name]


@pytest.mark.parametrize("store", ["memory", "sqlite"])
def test_no_write_poisons_a_resource(store: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.lists(writes(), min_size=1, max_size=8))
    def run(batch: list[tuple[str, str, str, bytes]]) -> None:
        spec = (
            "memory"
            if store == "memory"
            else f"sqlite:{tmp_path_factory.mktemp('db') / 'db.sqlite'}"
        )
        asyncio.run(_run(spec, batch))

    run()


async def _run(spec: str, batch: list[tuple[str, str, str, bytes]]) -> None:
    app = ApiServer(open_store(spec))
    try:
        status, payload = await call(
            app, "POST", CRD_PATH, ctype="application/json", body=orjson.dumps(FREE_FORM_CRD)
        )
        assert status == 201, payload
        for _ in range(200):
            if (await call(app, "GET", f"/apis/{GV}"))[0] == 200:
                break
            await asyncio.sleep(0.005)
        status, payload = await call(
            app,
            "POST",
            CMS,
            ctype="application/json",
            body=orjson.dumps(
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}}
            ),
        )
        assert status == 201, payload
        expected: dict[str, Any] = {}
        for method, path, ctype, body in batch:
            status, payload = await call(app, method, path, ctype=ctype, body=body)
            if status in (200, 201) and path.startswith(THINGS):
                obj = orjson.loads(payload)
                expected[obj["metadata"]["name"]] = obj
                decode.check_depth(obj)
            await assert_readable(app, expected)
        status, payload = await call(app, "GET", f"{CMS}/cm")
        assert status == 200, payload
    finally:
        await app.stop()
        app.store.close()


def test_the_strategies_reach_past_the_limit() -> None:
    """The deep values straddle MAX_DEPTH, so both outcomes are exercised."""
    depths = set()

    @settings(max_examples=40, deadline=None)
    @given(deep_values())
    def sample(value: Any) -> None:
        depth, stack = 0, [(value, 1)]
        while stack:
            node, level = stack.pop()
            if isinstance(node, dict | list):
                depth = max(depth, level)
                stack.extend(
                    (child, level + 1)
                    for child in (node.values() if isinstance(node, dict) else node)
                )
        depths.add(depth + 2 > decode.MAX_DEPTH)  # object and spec around it

    sample()
    assert depths == {True, False}
