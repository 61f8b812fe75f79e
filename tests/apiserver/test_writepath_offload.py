"""A big create is admitted off the event loop (``ResourceApi.create_async``): the
per-body work (managedFields, typed decoding, admission, the storage form) of a body
over ``decode.OFFLOAD_BYTES`` runs in a worker thread, so the loop serves others
meanwhile; the store reads before it and the write after it stay on the loop, and the
answer is the one ``create`` gives. Checked by counting: admission is made slow on
purpose (a sleep that holds no lock), and the loop's ticks during it are counted, none
when it runs on the loop."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson
import pytest

from kubewerk.apiserver import decode
from kubewerk.apiserver.app import ApiServer
from kubewerk.apiserver.request import Target
from kubewerk.apiserver.storage import open_store
from tests.apiserver.helpers import asgi_call, json_call, open_crd

CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
SLOW = 0.05  # seconds admission takes, on purpose


class Server:
    """An in-process server with an open ``things.ex.test`` and a ``rules.ex.test`` whose
    schema has a CEL rule."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.app = ApiServer(open_store("memory"))
        ruled = open_crd("ex.test", "rules", "Rule")
        ruled["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = {
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": True,
            "x-kubernetes-validations": [{"rule": "has(self.metadata)"}],
        }
        for crd in (open_crd("ex.test", "things", "Thing"), ruled):
            status, out = self.run(json_call(self.app, "POST", CRD_PATH, crd))
            assert status == 201, out
        for plural in ("things", "rules"):
            for _ in range(200):
                path = f"/apis/ex.test/v1/namespaces/default/{plural}"
                if self.run(asgi_call(self.app, "GET", path))[0] == 200:
                    break
                self.run(asyncio.sleep(0.01))

    def run(self, call: Any) -> Any:
        return self.loop.run_until_complete(call)

    def target(self, group: str, resource: str) -> Target:
        rtype = self.app.registry.get(group, resource)
        assert rtype is not None
        return Target(rtype, "v1", "default", None)

    def close(self) -> None:
        self.run(self.app.stop())
        self.loop.close()


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    made = Server()
    try:
        yield made
    finally:
        made.close()


@dataclass
class Watch:
    """Where admission ran, and how often the loop ticked while it did."""

    threads: list[str] = field(default_factory=list)
    names: dict[str, str] = field(default_factory=dict)
    """The thread each object's admission ran in, by object name."""
    admitting: bool = False
    ticks_while_admitting: int = 0


@pytest.fixture
def watch(server: Server, monkeypatch: pytest.MonkeyPatch) -> Watch:
    seen = Watch()
    admission = server.app.api.admission
    admit = admission.admit

    def slow_admit(req: Any) -> None:
        seen.threads.append(threading.current_thread().name)
        seen.names[str(req.obj["metadata"].get("name"))] = threading.current_thread().name
        seen.admitting = True
        try:
            time.sleep(SLOW)  # blocks whichever thread runs it, holds no lock
            admit(req)
        finally:
            seen.admitting = False

    monkeypatch.setattr(admission, "admit", slow_admit)
    return seen


def _create(
    server: Server, seen: Watch, group: str, resource: str, body: bytes, offloaded: bool
) -> Any:
    """Create from ``body`` (decoded as the server decodes it) with ``create_async`` or
    ``create``, a ticker running on the loop meanwhile."""
    api = server.app.api

    async def call() -> Any:
        done = False

        async def ticker() -> None:
            while not done:
                if seen.admitting:
                    seen.ticks_while_admitting += 1
                await asyncio.sleep(0)

        ticking = asyncio.create_task(ticker())
        await asyncio.sleep(0)
        try:
            value = decode.json_value(body)
            target = server.target(group, resource)
            if offloaded:
                return await api.create_async(target, value, {}, len(body))
            return api.create(target, value, {})
        finally:
            done = True
            await ticking
            decode.forget()

    return server.run(call())


def _body(api_version: str, kind: str, name: str, top: str, keys: int, repeat: bool) -> bytes:
    obj = {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": name},
        top: {f"k{i}": "v" * 30 for i in range(keys)},
    }
    body = orjson.dumps(obj, option=orjson.OPT_INDENT_2)
    if repeat:  # a repeated key: its warning comes back either way
        body = body.replace(f'"{top}": {{'.encode(), f'"{top}": {{"k1": "x",'.encode(), 1)
    return body


BIG, SMALL = 2500, 10

KINDS = {
    "configmap": ("", "configmaps", "v1", "ConfigMap", "data"),
    "custom-resource": ("ex.test", "things", "ex.test/v1", "Thing", "spec"),
}

_VOLATILE = frozenset(("uid", "resourceVersion", "creationTimestamp", "time", "name"))


def _stable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in value.items() if k not in _VOLATILE}
    if isinstance(value, list):
        return [_stable(v) for v in value]
    return value


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_big_create_is_admitted_off_the_loop(server: Server, watch: Watch, kind: str) -> None:
    group, resource, api_version, kind_name, top = KINDS[kind]
    body = _body(api_version, kind_name, f"off-{kind}", top, BIG, repeat=True)
    assert len(body) > decode.OFFLOAD_BYTES
    offloaded = _create(server, watch, group, resource, body, offloaded=True)
    assert watch.threads and watch.threads[-1] != threading.main_thread().name
    assert watch.ticks_while_admitting > 0
    ticks = watch.ticks_while_admitting
    on_loop = _create(
        server, watch, group, resource, body.replace(b"off-", b"on-"), offloaded=False
    )
    assert watch.threads[-1] == threading.main_thread().name
    assert watch.ticks_while_admitting == ticks  # the loop stood still meanwhile
    assert offloaded.status == on_loop.status == 201
    assert offloaded.warnings == on_loop.warnings == ['duplicate field "' + top + '.k1"']
    assert _stable(offloaded.body) == _stable(on_loop.body)
    assert offloaded.body["metadata"]["name"] == f"off-{kind}"
    stored = server.app.store.get(
        server.target(group, resource).rtype.key("default", f"off-{kind}")
    )
    assert stored is not None


def test_a_small_body_is_admitted_on_the_loop(server: Server, watch: Watch) -> None:
    body = _body("v1", "ConfigMap", "small", "data", SMALL, repeat=False)
    result = _create(server, watch, "", "configmaps", body, offloaded=True)
    assert result.status == 201
    assert watch.threads == [threading.main_thread().name]


def test_a_schema_with_cel_rules_is_admitted_on_the_loop(server: Server, watch: Watch) -> None:
    body = _body("ex.test/v1", "Rule", "ruled", "spec", BIG, repeat=False)
    result = _create(server, watch, "ex.test", "rules", body, offloaded=True)
    assert result.status == 201
    assert watch.threads == [threading.main_thread().name]


def test_an_invalid_big_body_is_refused_the_same(server: Server, watch: Watch) -> None:
    body = _body("v1", "ConfigMap", "bad-keys", "data", BIG, repeat=False).replace(
        b'"k7":', b'"k 7":'
    )
    with pytest.raises(Exception) as offloaded:
        _create(server, watch, "", "configmaps", body, offloaded=True)
    with pytest.raises(Exception) as on_loop:
        _create(server, watch, "", "configmaps", body, offloaded=False)
    assert offloaded.value.to_status() == on_loop.value.to_status()  # type: ignore[attr-defined]
    assert offloaded.value.code == 422  # type: ignore[attr-defined]


def test_a_generated_name_taken_meanwhile_is_generated_again(
    server: Server, watch: Watch, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another write takes the generated name while the create is admitted off the loop:
    the name is generated again at the write, as RetryGenerateName does."""
    api = server.app.api
    admit = api._create_admit
    taken: list[str] = []

    def admit_then_take(draft: Any) -> None:
        admit(draft)
        if taken:  # the other create, admitted on the loop
            return
        name = draft.obj["metadata"]["name"]
        taken.append(name)
        other = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}
        server.loop.call_soon_threadsafe(api.create, server.target("", "configmaps"), other, {})
        time.sleep(0.02)  # the loop runs the other create meanwhile

    monkeypatch.setattr(api, "_create_admit", admit_then_take)
    body = _body("v1", "ConfigMap", "", "data", BIG, repeat=False).replace(
        b'"name": ""', b'"generateName": "gen-"'
    )
    result = _create(server, watch, "", "configmaps", body, offloaded=True)
    assert result.status == 201
    name = result.body["metadata"]["name"]
    assert taken and name != taken[0] and name.startswith("gen-") and len(name) == len(taken[0])


def test_a_big_post_answers_version_requests_while_it_is_admitted(
    server: Server, watch: Watch
) -> None:
    """Through the HTTP app: GET /version is answered while a big ConfigMap POST is being
    admitted (admission made slow on purpose), not after it."""
    body = _body("v1", "ConfigMap", "posted", "data", BIG, repeat=False)
    answered: list[str] = []

    posted = False

    async def call() -> int:
        nonlocal posted

        async def versions() -> None:
            # asks once admission is under way; never, if the loop cannot see it
            while not posted:
                if watch.admitting:
                    status, _, _ = await asgi_call(server.app, "GET", "/version")
                    answered.append(f"version {status} while admitting: {watch.admitting}")
                    return
                await asyncio.sleep(0)

        asking = asyncio.create_task(versions())
        status, _, payload = await asgi_call(
            server.app,
            "POST",
            "/api/v1/namespaces/default/configmaps",
            "",
            {"content-type": "application/json"},
            body,
        )
        posted = True
        assert status == 201, payload
        await asking
        return status

    assert server.run(call()) == 201
    assert answered == ["version 200 while admitting: True"]
    assert watch.names["posted"] != threading.main_thread().name
