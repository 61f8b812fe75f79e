"""Query strings and paths written to be read two ways: repeated parameters, separators
and escapes Go's URL parser refuses, escapes decoded twice. Each is read as kube-apiserver
reads it (Go's ``url.ParseQuery`` and ``URL.Path``, kube's query conversion)."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import orjson
import pytest

from kubewerk.apiserver.app import ApiServer
from kubewerk.apiserver.auth.requestinfo import request_info
from kubewerk.apiserver.auth.types import Attributes, Decision, UserInfo
from kubewerk.apiserver.querystring import parse_query, query_flag
from kubewerk.apiserver.server import EmbeddedServer
from kubewerk.apiserver.storage.memory import MemoryStore
from tests.apiserver.helpers import asgi_call

CMS = "/api/v1/namespaces/default/configmaps"
JSON = {"content-type": "application/json", "host": "127.0.0.1"}


@pytest.fixture
async def app() -> AsyncIterator[ApiServer]:
    server = ApiServer(MemoryStore())
    for name, tier in (("a", "front"), ("b", "back"), ("c", "back")):
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "labels": {"tier": tier}},
        }
        status, _, payload = await asgi_call(
            server, "POST", CMS, headers=JSON, body=orjson.dumps(body)
        )
        assert status == 201, payload
    yield server
    await server.stop()


async def names(app: ApiServer, query: str) -> list[str]:
    status, _, payload = await asgi_call(app, "GET", CMS, query, headers=JSON)
    assert status == 200, payload
    return [item["metadata"]["name"] for item in orjson.loads(payload)["items"]]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("limit=1&limit=500", ["a"]),
        ("limit=500&limit=1", ["a", "b", "c"]),
        ("labelSelector=tier%3Dfront&labelSelector=tier%3Dback", ["a"]),
        ("labelSelector=tier%3Dback&labelSelector=tier%3Dfront", ["b", "c"]),
    ],
    ids=["limit-first", "limit-first-large", "selector-first", "selector-first-back"],
)
async def test_a_repeated_parameter_takes_its_first_value(
    app: ApiServer, query: str, expected: list[str]
) -> None:
    assert await names(app, query) == expected


@pytest.mark.parametrize(
    "query",
    [
        "labelSelector=tier%3Dback;limit=1",
        "labelSelector=tier%3Dba%ZZck",
        "labelSelector=tier%3Dback%",
        "limit=1;",
    ],
    ids=["semicolon", "bad-escape", "cut-escape", "semicolon-after"],
)
async def test_a_pair_go_cannot_parse_is_dropped(app: ApiServer, query: str) -> None:
    assert await names(app, query) == ["a", "b", "c"]


@pytest.mark.parametrize(
    "query",
    ["dryRun=All&dryRun=bogus", "dryRun=bogus&dryRun=All"],
    ids=["bad-second", "bad-first"],
)
async def test_every_dry_run_value_must_be_all(app: ApiServer, query: str) -> None:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dry"}}
    status, _, payload = await asgi_call(
        app, "POST", CMS, query, headers=JSON, body=orjson.dumps(body)
    )
    assert status == 400, payload
    assert 'unsupported dry run value "bogus"' in orjson.loads(payload)["message"]


def test_the_parser_reads_what_go_reads() -> None:
    assert parse_query(b"a=1+2%20&b&=v&c=%C3%A9&d=\xc3\xa9&e=%FF&a=9") == {
        "a": "1 2 ",
        "b": "",
        "": "v",
        "c": "é",
        "d": "é",
        "e": "\ufffd",
    }
    assert parse_query(b"dryRun=All&dryRun=All") == {"dryRun": "All"}


def get(server: EmbeddedServer, target: str) -> tuple[int, dict[str, object]]:
    url = urlsplit(server.url)
    with socket.create_connection((url.hostname or "127.0.0.1", url.port or 80), timeout=5) as s:
        s.sendall(
            f"GET {target} HTTP/1.1\r\nHost: {url.netloc}\r\nConnection: close\r\n\r\n".encode()
        )
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split(b" ")[1]), orjson.loads(body)


@pytest.mark.parametrize(
    ("target", "name"),
    [
        (f"{CMS}/a%252Fb", "a%2Fb"),
        (f"{CMS}/%252E%252E", "%2E%2E"),
        (f"{CMS}/a%2541", "a%41"),
    ],
    ids=["slash", "dots", "letter"],
)
def test_a_path_is_decoded_once(server: EmbeddedServer, target: str, name: str) -> None:
    status, body = get(server, target)
    assert status == 404, body
    assert body["details"] == {"name": name, "kind": "configmaps"}, body


class OnlyVisible:
    """Allows reading configmaps named ``visible`` only (and list/watch only when a field
    selector names it), and watches but not lists; creates always."""

    def authorize(self, attrs: Attributes) -> Decision:
        if attrs.verb == "create":
            return Decision(True)
        if attrs.verb == "list":
            return Decision(False)
        return Decision(attrs.name == "visible")

    def rules_for(
        self, user: UserInfo, namespace: str
    ) -> tuple[list[dict[str, object]], list[dict[str, object]], bool]:
        return [], [], True


@pytest.mark.parametrize(
    ("query", "code"),
    [
        ("watch=1&fieldSelector=metadata.name%3Dvisible&timeoutSeconds=1", 200),
        ("watch=1&fieldSelector=metadata.name%3Dhidden&fieldSelector=metadata.name%3Dvisible", 403),
        ("watch=0&watch=1&fieldSelector=metadata.name%3Dvisible", 403),
    ],
    ids=["allowed", "second-selector", "second-watch"],
)
async def test_a_request_is_authorized_as_it_is_served(query: str, code: int) -> None:
    """The authorizer sees the parameters the handler serves: the first of each (it saw
    the last, so a repeated fieldSelector or watch read what it did not authorize)."""
    server = ApiServer(MemoryStore(), authorizer=OnlyVisible())
    for name in ("visible", "hidden"):
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}
        status, _, payload = await asgi_call(
            server, "POST", CMS, headers=JSON, body=orjson.dumps(body)
        )
        assert status == 201, payload
    try:
        status, _, payload = await asgi_call(server, "GET", CMS, query, headers=JSON)
        assert status == code, payload
        if code == 200:
            assert b'"hidden"' not in payload
    finally:
        await server.stop()


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, False),
        ("", True),
        ("yes", True),
        ("TRUE", True),
        ("1", True),
        ("0", False),
        ("False", False),
        ("false", False),
    ],
    ids=["absent", "empty", "yes", "TRUE", "one", "zero", "False", "false"],
)
def test_a_boolean_parameter_is_read_as_kube_reads_it(value: str | None, expected: bool) -> None:
    query = {} if value is None else {"watch": value}
    assert query_flag(query, "watch") is expected
    verb = request_info("GET", CMS, query).verb
    assert verb == ("watch" if expected else "list")


async def test_watch_yes_is_a_watch(app: ApiServer) -> None:
    """``?watch=yes`` streams events (kube's bool conversion), where a list was served."""
    status, _, payload = await asgi_call(
        app, "GET", CMS, "watch=yes&timeoutSeconds=1", headers=JSON
    )
    assert status == 200, payload
    events = [orjson.loads(line) for line in payload.splitlines()]
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("ADDED", "a"),
        ("ADDED", "b"),
        ("ADDED", "c"),
    ]
