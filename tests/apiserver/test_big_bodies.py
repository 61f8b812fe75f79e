"""A big request body is decoded in a worker thread (``decode.predecode``), not on the event
loop: while a slow body (YAML, or JSON whose keys repeat) decodes, the server answers other
requests; and the answers (status, body, Warning headers) are those of the on-loop decode,
which the same requests get with ``decode.OFFLOAD_BYTES`` set out of reach."""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import orjson
import pytest
import yaml

from kubewerk.apiserver import decode
from kubewerk.apiserver.app import ApiServer
from kubewerk.apiserver.storage import open_store
from tests.apiserver.helpers import asgi_call, configmap_name_policy, json_call

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
APPLY = "application/apply-patch+yaml"
# just over the threshold (about 70 KB), quick to decode twice (about 20 ms as YAML)
BIG_KEYS = 2500


def big_data(prefix: str = "k") -> dict[str, str]:
    return {f"{prefix}{i}": "v" * 20 for i in range(BIG_KEYS)}


def configmap(name: str, data: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def yaml_body(obj: Any, extra: str = "") -> bytes:
    """``obj`` as block YAML (not plain JSON: the YAML reader runs), with ``extra`` lines
    added under ``data`` (a repeated key)."""
    text = yaml.safe_dump(obj, sort_keys=False)
    if extra:
        text = text.replace("\ndata:\n", "\ndata:\n" + extra, 1)
    body = text.encode()
    assert len(body) > decode.OFFLOAD_BYTES
    return body


def json_body(obj: Any, repeat: str = "") -> bytes:
    """``obj`` as indented JSON (not orjson's own text), with ``repeat`` (``"key": value``)
    inserted first in ``data`` (a repeated key)."""
    body = orjson.dumps(obj, option=orjson.OPT_INDENT_2)
    if repeat:
        body = body.replace(b'"data": {', b'"data": {' + repeat.encode() + b",", 1)
    assert len(body) > decode.OFFLOAD_BYTES
    return body


# -- the event loop stays free -----------------------------------------------------------


async def _timed_calls(app: ApiServer, body: bytes) -> list[str]:
    """A big YAML create and a GET /version sent once the create's body is in: the order
    in which their answers come."""
    answered: list[str] = []
    body_in = asyncio.Event()

    async def big() -> None:
        delivered = False

        async def receive() -> dict[str, Any]:
            nonlocal delivered
            if not delivered:
                delivered = True
                body_in.set()
                return {"type": "http.request", "body": body, "more_body": False}
            await asyncio.Event().wait()  # never disconnects
            raise AssertionError("unreachable")

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                answered.append(f"create {message['status']}")

        scope = {
            "type": "http",
            "method": "POST",
            "path": CONFIGMAPS,
            "query_string": b"",
            "headers": [
                (b"content-type", b"application/yaml"),
                (b"content-length", str(len(body)).encode()),
            ],
            "client": ("127.0.0.1", 50000),
            "server": ("127.0.0.1", 6443),
        }
        await app(scope, receive, send)

    task = asyncio.create_task(big())
    await body_in.wait()
    status, _, _ = await asgi_call(app, "GET", "/version")
    answered.append(f"version {status}")
    await task
    return answered


def test_the_loop_answers_others_while_a_big_yaml_body_decodes() -> None:
    # about 150 KB, 50 ms of YAML decoding on the loop (a 2.4 MB body takes 1.3 s); the
    # order does not depend on the size: the create's task does not give the loop up
    # between its body's arrival and the end of an on-loop decode
    data = {f"key{i}": "v" * 30 for i in range(4000)}
    body = yaml_body(configmap("big-yaml", data))
    loop = asyncio.new_event_loop()
    try:
        app = ApiServer(open_store("memory"))
        answered = loop.run_until_complete(_timed_calls(app, body))
        loop.run_until_complete(app.stop())
    finally:
        loop.close()
    assert answered == ["version 200", "create 201"]


# -- the same answers, whichever side decoded -------------------------------------------


@dataclass(frozen=True)
class Step:
    method: str
    path: str
    content_type: str
    body: bytes
    query: str = ""


def _steps_create(body: bytes, content_type: str, query: str = "") -> Callable[[str], list[Step]]:
    def steps(name: str) -> list[Step]:
        return [Step("POST", CONFIGMAPS, content_type, body.replace(b"NAME", name.encode()), query)]

    return steps


def _steps_apply_create(body: bytes) -> Callable[[str], list[Step]]:
    """A server-side apply that creates ConfigMap ``name``."""

    def steps(name: str) -> list[Step]:
        return [
            Step(
                "PATCH",
                f"{CONFIGMAPS}/{name}",
                APPLY,
                body.replace(b"NAME", name.encode()),
                "fieldManager=me",
            )
        ]

    return steps


def _steps_after_create(
    method: str, content_type: str, body: bytes, query: str = ""
) -> Callable[[str], list[Step]]:
    """Create a small ConfigMap ``name``, then write to it."""

    def steps(name: str) -> list[Step]:
        small = orjson.dumps(configmap(name, {"a": "b"}))
        return [
            Step("POST", CONFIGMAPS, "application/json", small),
            Step(
                method,
                f"{CONFIGMAPS}/{name}",
                content_type,
                body.replace(b"NAME", name.encode()),
                query,
            ),
        ]

    return steps


_DUP_YAML = yaml_body(configmap("NAME", big_data()), extra="  k7: first\n")
_DUP_JSON = json_body(configmap("NAME", big_data()), repeat='"k9": "first"')
# a ``:`` written as an escape in every value (the key-by-key parse runs)
_ESCAPED_JSON = json_body(configmap("NAME", big_data())).replace(b'": "vvvv', b'": "\\u003av')
_DEEP_YAML = (
    b"apiVersion: v1\nkind: ConfigMap\nx: " + b"[" * 150 + b"]" * 150 + b"\n#" + b"p" * 70000
)
_BAD_JSON = json_body(configmap("NAME", big_data()))[:-3]
_BAD_YAML = yaml_body(configmap("NAME", big_data())) + b"\n  bad: [\n"
_MERGE_DUP = json_body({"data": big_data("m")}, repeat='"m5": "first"')
_APPLY_DUP = yaml_body(configmap("NAME", big_data("s")), extra="  s3: first\n")
_JSON_PATCH = orjson.dumps(
    [{"op": "add", "path": f"/data/p{i}", "value": "v" * 20} for i in range(1500)],
    option=orjson.OPT_INDENT_2,
).replace(b'"op": "add",', b'"op": "add", "op": "add",', 3)
_DELETE_BIG = json_body(
    {"kind": "DeleteOptions", "apiVersion": "v1", "dryRun": ["All"], "data": big_data()},
    repeat='"k1": "x"',
)

CASES: dict[str, Callable[[str], list[Step]]] = {
    "yaml-create-duplicate-warn": _steps_create(_DUP_YAML, "application/yaml"),
    "yaml-create-duplicate-strict": _steps_create(
        _DUP_YAML, "application/yaml", "fieldValidation=Strict"
    ),
    "json-create-duplicate-warn": _steps_create(_DUP_JSON, "application/json"),
    "json-create-duplicate-strict": _steps_create(
        _DUP_JSON, "application/json", "fieldValidation=Strict"
    ),
    "json-create-escaped-colon": _steps_create(_ESCAPED_JSON, "application/json"),
    "yaml-create-too-deep": _steps_create(_DEEP_YAML, "application/yaml"),
    "json-create-syntax-error": _steps_create(_BAD_JSON, ""),
    "yaml-create-syntax-error": _steps_create(_BAD_YAML, "application/yaml"),
    "yaml-update-duplicate": _steps_after_create("PUT", "application/yaml", _DUP_YAML),
    "json-update-duplicate-strict": _steps_after_create(
        "PUT", "application/json", _DUP_JSON, "fieldValidation=Strict"
    ),
    "merge-patch-duplicate": _steps_after_create(
        "PATCH", "application/merge-patch+json", _MERGE_DUP
    ),
    "strategic-patch-duplicate-strict": _steps_after_create(
        "PATCH", "application/strategic-merge-patch+json", _MERGE_DUP, "fieldValidation=Strict"
    ),
    "json-patch-duplicate": _steps_after_create(
        "PATCH", "application/json-patch+json", _JSON_PATCH
    ),
    "apply-duplicate-warn": _steps_after_create("PATCH", APPLY, _APPLY_DUP, "fieldManager=me"),
    "apply-duplicate-strict": _steps_after_create(
        "PATCH", APPLY, _APPLY_DUP, "fieldManager=me&fieldValidation=Strict"
    ),
    "apply-create-syntax-error": _steps_apply_create(_BAD_YAML),
    "apply-create-duplicate": _steps_apply_create(_APPLY_DUP),
    "delete-options-big": _steps_after_create("DELETE", "application/json", _DELETE_BIG),
}

_VOLATILE = frozenset(("uid", "resourceVersion", "creationTimestamp", "time"))


def _stable(value: Any) -> Any:
    """An answer without what differs between two servers (uids, revisions, times)."""
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in value.items() if k not in _VOLATILE}
    if isinstance(value, list):
        return [_stable(v) for v in value]
    return value


class Server:
    """One in-process server (optionally with an admission policy on ConfigMaps, so
    writes take the admission chain) on its own event loop."""

    def __init__(self, admission: bool) -> None:
        self.loop = asyncio.new_event_loop()
        self.app = ApiServer(open_store("memory"))
        if admission:
            self._admit_configmaps()

    def _admit_configmaps(self) -> None:
        vap = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies"
        binding = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings"
        policy, bound = configmap_name_policy("configmaps", "forbidden", "Fail")
        for path, obj in ((vap, policy), (binding, bound)):
            status, out = self.loop.run_until_complete(json_call(self.app, "POST", path, obj))
            assert status == 201, out

    def close(self) -> None:
        self.loop.run_until_complete(self.app.stop())
        self.loop.close()

    def run(self, steps: list[Step]) -> list[tuple[int, Any, list[str]]]:
        answers = []
        for step in steps:
            status, headers, payload = self.loop.run_until_complete(
                asgi_call(
                    self.app,
                    step.method,
                    step.path,
                    step.query,
                    headers={"content-type": step.content_type},
                    body=step.body,
                )
            )
            warnings = [value for name, value in headers if name == "warning"]
            answers.append((status, _stable(orjson.loads(payload)), warnings))
        return answers


def _pair(admission: bool) -> Iterator[tuple[Server, Server]]:
    pair = (Server(admission), Server(admission))
    try:
        yield pair
    finally:
        for server in pair:
            server.close()


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[Server, Server]]:
    """(offloading, on the loop) servers."""
    yield from _pair(False)


@pytest.fixture(scope="module")
def admitting() -> Iterator[tuple[Server, Server]]:
    """(offloading, on the loop) servers whose ConfigMap writes take the admission chain."""
    yield from _pair(True)


# the writes the admission chain decodes itself (patches, applies) or passes on
CHAIN_CASES = [
    "apply-create-duplicate",
    "apply-duplicate-strict",
    "apply-duplicate-warn",
    "json-create-duplicate-warn",
    "json-patch-duplicate",
    "json-update-duplicate-strict",
    "merge-patch-duplicate",
    "yaml-update-duplicate",
]


@pytest.mark.parametrize("case", sorted(CASES))
def test_same_answer_as_the_on_loop_decode(
    servers: tuple[Server, Server], case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _compare(servers, case, monkeypatch)


@pytest.mark.parametrize("case", CHAIN_CASES)
def test_same_answer_through_admission(
    admitting: tuple[Server, Server], case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert admitting[0].app.chain.active(_configmaps_target(admitting[0]))
    _compare(admitting, case, monkeypatch)


def _configmaps_target(server: Server) -> Any:
    from kubewerk.apiserver.request import Target

    rtype = server.app.registry.get("", "configmaps")
    assert rtype is not None
    return Target(rtype, "v1", "default", None)


def _compare(servers: tuple[Server, Server], case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    offloading, on_loop = servers
    name = case
    threaded: list[bytes] = []
    in_thread = decode._decoded_in_thread

    def counted(body: bytes, as_yaml: bool, what: str) -> Any:
        threaded.append(body)
        return in_thread(body, as_yaml, what)

    monkeypatch.setattr(decode, "_decoded_in_thread", counted)
    steps = CASES[case](name)
    got = offloading.run(steps)
    big = [step.body for step in steps if len(step.body) > decode.OFFLOAD_BYTES]
    assert threaded == big  # decoded in the worker thread, once

    monkeypatch.setattr(decode, "OFFLOAD_BYTES", 1 << 62)
    expected = on_loop.run(steps)
    assert threaded == big  # not again
    assert got == expected
    # each case is what its name says
    status, answer, warnings = got[-1]
    if "strict" in case or "error" in case or "deep" in case:
        assert status == 400, answer
    else:
        assert status in (200, 201), answer
    assert bool(warnings) == ("duplicate" in case and "strict" not in case), warnings


# -- the hand-off ------------------------------------------------------------------------


def test_each_consumer_of_a_handed_off_body_gets_its_own_value() -> None:
    body = _DUP_JSON

    async def decoded() -> tuple[Any, Any, Any, Any]:
        token = await decode.predecode(body, False, "the patch")
        assert token is not None
        try:
            first = decode.json_value(body, "the patch")
            first_found = decode.body_duplicates(first)
            second = decode.json_value(body, "the patch")
            return first, first_found, second, decode.body_duplicates(second)
        finally:
            decode.release(token)

    first, first_found, second, second_found = asyncio.run(decoded())
    assert first == second == decode.json_value(body, "the patch")
    assert first is not second and first["data"] is not second["data"]
    assert first_found is second_found is not None
    assert first_found.messages() == ['duplicate field "data.k9"']


@pytest.mark.parametrize("as_yaml", [False, True], ids=["json", "yaml"])
def test_a_handed_off_error_is_raised_anew_each_time(as_yaml: bool) -> None:
    body = _BAD_YAML if as_yaml else _BAD_JSON
    decoder = decode.yaml_value if as_yaml else decode.json_value
    with pytest.raises(decode.DecodeError) as on_loop:
        decoder(body)

    async def errors() -> list[decode.DecodeError]:
        token = await decode.predecode(body, as_yaml, "the object")
        assert token is not None
        found = []
        for _ in range(2):
            with pytest.raises(decode.DecodeError) as raised:
                decoder(body)
            found.append(raised.value)
        decode.release(token)
        return found

    first, second = asyncio.run(errors())
    assert first is not second
    assert type(first) is type(on_loop.value) and str(first) == str(on_loop.value)
    assert str(second) == str(on_loop.value)


def test_a_small_body_is_decoded_where_it_is_used() -> None:
    assert asyncio.run(decode.predecode(b'{"a": 1}', False, "the object")) is None


def test_a_released_hand_off_keeps_nothing_alive_in_contexts_copied_from_the_request() -> None:
    # a task or timer the request started holds a copy of the request's context for as
    # long as it lives (a watch): the hand-off must not keep the body or its value alive
    async def copied() -> contextvars.Context:
        token = await decode.predecode(_DUP_YAML, True, "the object")
        assert token is not None
        decode.yaml_value(_DUP_YAML)
        context = contextvars.copy_context()
        decode.release(token)
        return context

    context = asyncio.run(copied())
    left = context.run(decode._HANDOFF.get)
    assert left is not None
    assert (left.body, left.value, left.duplicates, left.encoded) == (None, None, None, b"")
