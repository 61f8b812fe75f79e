"""ConfigMap and Secret data keys are config keys, as kube's ``ValidateConfigMap`` and
``ValidateSecret`` (pkg/apis/core/validation/validation.go) check them with
apimachinery's ``IsConfigMapKey``: a 422 naming ``data[<key>]`` / ``binaryData[<key>]``."""

from __future__ import annotations

from typing import Any

import pytest

from kubewerk.apiserver.app import ApiServer
from kubewerk.apiserver.storage import open_store
from tests.apiserver.helpers import json_call

CM = "/api/v1/namespaces/default/configmaps"
SECRETS = "/api/v1/namespaces/default/secrets"
REGEX_MSG = (
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.' "
    "(e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is "
    "'[-._a-zA-Z0-9]+')"
)


@pytest.fixture(scope="module")
def app() -> ApiServer:
    return ApiServer(open_store("memory"))


def causes(body: dict[str, Any]) -> list[tuple[str, str]]:
    return [(c["field"], c["message"]) for c in body["details"]["causes"]]


async def test_the_briefs_key_is_refused_with_kubes_message(app: ApiServer) -> None:
    cm = {"metadata": {"name": "tilde"}, "data": {"~tilde/slash": "x"}}
    status, body = await json_call(app, "POST", CM, cm)
    assert status == 422, body
    assert body["reason"] == "Invalid"
    assert body["message"] == (
        'ConfigMap "tilde" is invalid: data[~tilde/slash]: Invalid value: "~tilde/slash": '
        + REGEX_MSG
    )


@pytest.mark.parametrize(
    ("key", "messages"),
    [
        (".", ["Invalid value: \".\": must not be '.'"]),
        ("..", ["Invalid value: \"..\": must not be '..'"]),
        ("..x", ["Invalid value: \"..x\": must not start with '..'"]),
        ("", ['Invalid value: "": ' + REGEX_MSG]),
        ("k" * 254, [f'Invalid value: "{"k" * 254}": must be no more than 253 bytes']),
        (
            "..é",
            [
                'Invalid value: "..é": ' + REGEX_MSG,
                "Invalid value: \"..é\": must not start with '..'",
            ],
        ),
    ],
    ids=["dot", "dotdot", "dotdot-prefix", "empty", "too-long", "two-errors"],
)
async def test_each_key_rule(app: ApiServer, key: str, messages: list[str]) -> None:
    cm = {"metadata": {"name": "rules"}, "binaryData": {key: "eA=="}}
    status, body = await json_call(app, "POST", CM, cm)
    assert status == 422, body
    assert causes(body) == [(f"binaryData[{key}]", m) for m in messages]


async def test_keys_kube_accepts_are_accepted(app: ApiServer) -> None:
    keys = {".a": "1", "KEY_NAME": "2", "key-name.x": "3", "k" * 253: "4", "a..b": "5"}
    status, body = await json_call(app, "POST", CM, {"metadata": {"name": "ok"}, "data": keys})
    assert status == 201, body
    secret = {"metadata": {"name": "ok"}, "stringData": {".dot": "x"}, "data": {"k": "eA=="}}
    status, body = await json_call(app, "POST", SECRETS, secret)
    assert status == 201, body
    assert sorted(body["data"]) == [".dot", "k"]


async def test_a_key_in_data_and_binary_data(app: ApiServer) -> None:
    cm = {"metadata": {"name": "both"}, "data": {"b": "x", "a/": "y"}, "binaryData": {"b": "eA=="}}
    status, body = await json_call(app, "POST", CM, cm)
    assert status == 422, body
    assert causes(body) == [
        ("data[a/]", 'Invalid value: "a/": ' + REGEX_MSG),
        ("data[b]", 'Invalid value: "b": duplicate of key present in binaryData'),
    ]


async def test_secret_data_and_string_data_keys(app: ApiServer) -> None:
    secret = {"metadata": {"name": "s"}, "data": {"a b": "eA=="}, "stringData": {"c:d": "x"}}
    status, body = await json_call(app, "POST", SECRETS, secret)
    assert status == 422, body
    assert causes(body) == [
        ("data[a b]", 'Invalid value: "a b": ' + REGEX_MSG),
        ("data[c:d]", 'Invalid value: "c:d": ' + REGEX_MSG),
    ]


async def test_an_update_is_checked_too(app: ApiServer) -> None:
    status, body = await json_call(app, "POST", CM, {"metadata": {"name": "upd"}})
    assert status == 201, body
    body["data"] = {"..": "x"}
    status, got = await json_call(app, "PUT", f"{CM}/upd", body)
    assert status == 422, got
    assert causes(got) == [("data[..]", "Invalid value: \"..\": must not be '..'")]
    patch = {"stringData": {"x/y": "z"}}
    status, _ = await json_call(app, "POST", SECRETS, {"metadata": {"name": "upd"}})
    status, got = await json_call(
        app, "PUT", f"{SECRETS}/upd", {"metadata": {"name": "upd"}, **patch}
    )
    assert status == 422, got
    assert causes(got) == [("data[x/y]", 'Invalid value: "x/y": ' + REGEX_MSG)]
