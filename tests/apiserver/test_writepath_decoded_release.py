"""What the decoders keep of a request body for its duplicate fields (``decode._DECODED``:
the decoded value and the repeats found in it, as big as the body) ends with the request:
neither the request's own context nor a copy of it made during the request (a task or
callback the request started, which lives on) still holds the body afterwards."""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
import yaml

from kubewerk.apiserver import decode
from kubewerk.apiserver.app import ApiServer
from kubewerk.apiserver.storage import open_store
from tests.apiserver.helpers import asgi_call, configmap

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
APPLY = "application/apply-patch+yaml"


def _json(name: str, keys: int) -> bytes:
    """A ConfigMap ``name`` whose ``data`` repeats key ``k1`` (indented: not orjson's text)."""
    body = orjson.dumps(
        configmap(name, {f"k{i}": "v" * 20 for i in range(keys)}), option=orjson.OPT_INDENT_2
    )
    return body.replace(b'"data": {', b'"data": {"k1": "first",', 1)


def _yaml(name: str, keys: int) -> bytes:
    text = yaml.safe_dump(configmap(name, {f"k{i}": "v" * 20 for i in range(keys)}))
    return text.replace("\ndata:\n", "\ndata:\n  k1: first\n", 1).encode()


SMALL, BIG = 3, 3000

CASES: dict[str, tuple[str, str, str, bytes, str, int]] = {
    "json-create-small": ("POST", "", "application/json", _json("a", SMALL), "", 201),
    "json-create-big-strict": (
        "POST",
        "",
        "application/json",
        _json("b", BIG),
        "fieldValidation=Strict",
        400,
    ),
    "yaml-create-big": ("POST", "", "application/yaml", _yaml("c", BIG), "", 201),
    "apply-small": ("PATCH", "/d", APPLY, _yaml("d", SMALL), "fieldManager=me", 201),
    "apply-big": ("PATCH", "/e", APPLY, _yaml("e", BIG), "fieldManager=me", 201),
}


@pytest.fixture(scope="module")
def app() -> Iterator[ApiServer]:
    server = ApiServer(open_store("memory"))
    yield server
    asyncio.run(server.stop())


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_decoded_body_is_not_kept_after_the_request(
    app: ApiServer, case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    method, suffix, content_type, body, query, expected = CASES[case]
    assert (len(body) > decode.OFFLOAD_BYTES) == ("big" in case)
    looked_up: list[tuple[Any, decode.Duplicates | None, contextvars.Context]] = []
    body_duplicates = decode.body_duplicates

    def recorded(value: Any) -> decode.Duplicates | None:
        found = body_duplicates(value)
        # a copy of the request's context, as a task the request started would hold
        looked_up.append((value, found, contextvars.copy_context()))
        return found

    monkeypatch.setattr(decode, "body_duplicates", recorded)

    async def request() -> tuple[int, Any, Any]:
        status, _, payload = await asgi_call(
            app, method, CONFIGMAPS + suffix, query, {"content-type": content_type}, body
        )
        # what this (the request's) context still holds after it
        return status, orjson.loads(payload), decode._DECODED.get()

    status, out, left = asyncio.run(request())
    assert status == expected, out
    # the request did see its body's duplicate fields (other lookups are the server's
    # own writes as it starts)
    value, _, copied = next(entry for entry in looked_up if entry[1] is not None)
    assert left is None
    assert copied.run(body_duplicates, value) is None
    held = copied.run(decode._DECODED.get)
    assert held is None or (held.value, held.duplicates) == (None, None)
