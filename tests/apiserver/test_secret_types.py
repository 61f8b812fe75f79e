"""Secrets, ConfigMaps and ServiceAccounts as kube-apiserver decodes, validates and stores
them (k8s.io/kubernetes pkg/apis/core/validation/validation.go ValidateSecret,
ValidateSecretUpdate, ValidateConfigMap; pkg/apis/core/v1/conversion.go
Convert_v1_Secret_To_core_Secret): the well-known Secret types' rules, the 1 MiB total,
``stringData`` on every write path, typed decoding with Go's messages, and Go's
``encoding/json`` texts the docker config check reports."""

from __future__ import annotations

import base64
import itertools
from typing import Any

import orjson
import pytest

from kubewerk.apiserver.app import ApiServer
from kubewerk.apiserver.kindrules.gojson import Base64Error, decode_bytes, map_unmarshal_error
from kubewerk.apiserver.kindrules.tls_pair import pem_blocks, x509_key_pair_error
from kubewerk.apiserver.storage import open_store
from kubewerk.core.pki import new_ca
from tests.apiserver.helpers import asgi_call

SECRETS = "/api/v1/namespaces/default/secrets"
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
ACCOUNTS = "/api/v1/namespaces/default/serviceaccounts"
JSON_CT = "application/json"
MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"
APPLY = "application/apply-patch+yaml"
MIB = 1024 * 1024
_names = itertools.count()


@pytest.fixture(scope="module")
def app() -> ApiServer:
    return ApiServer(open_store("memory"))


async def call(
    app: ApiServer, method: str, path: str, body: Any = None, ctype: str = JSON_CT, query: str = ""
) -> tuple[int, Any]:
    raw = body if isinstance(body, bytes) else b"" if body is None else orjson.dumps(body)
    status, _, payload = await asgi_call(app, method, path, query, {"content-type": ctype}, raw)
    return status, orjson.loads(payload) if payload else None


def b64(text: str | bytes) -> str:
    return base64.b64encode(text.encode() if isinstance(text, str) else text).decode()


def secret(name: str, **fields: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, **fields}


def fresh(prefix: str = "s") -> str:
    return f"{prefix}{next(_names)}"


# -- the well-known types ---------------------------------------------------------------

REJECTED = [
    (
        "service-account-token",
        {"type": "kubernetes.io/service-account-token"},
        "metadata.annotations[kubernetes.io/service-account.name]: Required value",
    ),
    ("dockercfg-missing", {"type": "kubernetes.io/dockercfg"}, "data[.dockercfg]: Required value"),
    (
        "dockercfg-not-json",
        {"type": "kubernetes.io/dockercfg", "data": {".dockercfg": b64("{auths")}},
        'data[.dockercfg]: Invalid value: "<secret contents redacted>": '
        "invalid character 'a' looking for beginning of object key string",
    ),
    (
        "dockerconfigjson-missing",
        {"type": "kubernetes.io/dockerconfigjson", "data": {".dockercfg": b64("{}")}},
        "data[.dockerconfigjson]: Required value",
    ),
    (
        "dockerconfigjson-array",
        {"type": "kubernetes.io/dockerconfigjson", "stringData": {".dockerconfigjson": "[]"}},
        'data[.dockerconfigjson]: Invalid value: "<secret contents redacted>": '
        "json: cannot unmarshal array into Go value of type map[string]interface {}",
    ),
    (
        "dockerconfigjson-truncated",
        {"type": "kubernetes.io/dockerconfigjson", "stringData": {".dockerconfigjson": '{"a":'}},
        'data[.dockerconfigjson]: Invalid value: "<secret contents redacted>": '
        "unexpected end of JSON input",
    ),
    (
        "basic-auth",
        {"type": "kubernetes.io/basic-auth", "data": {"user": b64("x")}},
        "[data[username]: Required value, data[password]: Required value]",
    ),
    (
        "ssh-auth-empty",
        {"type": "kubernetes.io/ssh-auth", "data": {"ssh-privatekey": ""}},
        "data[ssh-privatekey]: Required value",
    ),
    (
        "tls-both",
        {"type": "kubernetes.io/tls"},
        "[data[tls.crt]: Required value, data[tls.key]: Required value]",
    ),
    (
        "tls-key",
        {"type": "kubernetes.io/tls", "data": {"tls.crt": ""}},
        "data[tls.key]: Required value",
    ),
]


@pytest.mark.parametrize(
    ("fields", "message"), [r[1:] for r in REJECTED], ids=[r[0] for r in REJECTED]
)
async def test_well_known_types_need_their_keys(
    app: ApiServer, fields: dict[str, Any], message: str
) -> None:
    name = fresh()
    status, body = await call(app, "POST", SECRETS, secret(name, **fields))
    assert (status, body["message"]) == (422, f'Secret "{name}" is invalid: {message}')
    first = body["details"]["causes"][0]
    assert first["reason"] in ("FieldValueRequired", "FieldValueInvalid")


ACCEPTED = [
    (
        "service-account-token",
        {
            "type": "kubernetes.io/service-account-token",
            "metadata": {"annotations": {"kubernetes.io/service-account.name": "default"}},
        },
    ),
    ("dockercfg-null", {"type": "kubernetes.io/dockercfg", "data": {".dockercfg": b64("null")}}),
    (
        "dockerconfigjson",
        {
            "type": "kubernetes.io/dockerconfigjson",
            "stringData": {".dockerconfigjson": '{"auths": {"r.example": {}}}'},
        },
    ),
    ("basic-auth-password-only", {"type": "kubernetes.io/basic-auth", "data": {"password": ""}}),
    ("ssh-auth", {"type": "kubernetes.io/ssh-auth", "stringData": {"ssh-privatekey": "k"}}),
    ("tls-empty-values", {"type": "kubernetes.io/tls", "data": {"tls.crt": "", "tls.key": ""}}),
    ("bootstrap-token", {"type": "bootstrap.kubernetes.io/token"}),
    ("own-type", {"type": "example.com/anything"}),
]


@pytest.mark.parametrize("fields", [r[1] for r in ACCEPTED], ids=[r[0] for r in ACCEPTED])
async def test_well_known_types_with_their_keys_are_stored(
    app: ApiServer, fields: dict[str, Any]
) -> None:
    name = fresh()
    body = secret(name, **fields)
    body["metadata"] = {"name": name, **fields.get("metadata", {})}
    status, created = await call(app, "POST", SECRETS, body)
    assert status == 201, created
    assert created["type"] == fields["type"]


async def test_type_rules_hold_on_update(app: ApiServer) -> None:
    name = fresh()
    tls = secret(name, type="kubernetes.io/tls", data={"tls.crt": b64("c"), "tls.key": b64("k")})
    assert (await call(app, "POST", SECRETS, tls))[0] == 201
    status, body = await call(app, "PATCH", f"{SECRETS}/{name}", {"data": {"tls.key": None}}, MERGE)
    assert (status, body["message"]) == (
        422,
        f'Secret "{name}" is invalid: data[tls.key]: Required value',
    )
    token = fresh()
    annotations = {"kubernetes.io/service-account.name": "default"}
    sa_token = secret(token, type="kubernetes.io/service-account-token")
    sa_token["metadata"]["annotations"] = annotations
    assert (await call(app, "POST", SECRETS, sa_token))[0] == 201
    patch = {"metadata": {"annotations": {"kubernetes.io/service-account.name": None}}}
    status, body = await call(app, "PATCH", f"{SECRETS}/{token}", patch, STRATEGIC)
    assert status == 422
    assert body["details"]["causes"] == [
        {
            "reason": "FieldValueRequired",
            "message": "Required value",
            "field": "metadata.annotations[kubernetes.io/service-account.name]",
        }
    ]


async def test_a_tls_secret_whose_pair_does_not_load_is_written_with_a_warning(
    app: ApiServer,
) -> None:
    pair, other = new_ca("pair"), new_ca("other")
    name = fresh()

    async def write(method: str, path: str, body: Any, ctype: str = JSON_CT) -> list[str]:
        raw = orjson.dumps(body)
        status, headers, payload = await asgi_call(
            app, method, path, "", {"content-type": ctype}, raw
        )
        assert status in (200, 201), payload
        return [v for k, v in headers if k == "warning"]

    good = {"tls.crt": b64(pair.cert), "tls.key": b64(pair.key)}
    assert await write("POST", SECRETS, secret(name, type="kubernetes.io/tls", data=good)) == []
    mismatched = {"data": {"tls.key": b64(other.key)}}
    assert await write("PATCH", f"{SECRETS}/{name}", mismatched, MERGE) == [
        '299 - "tls: private key does not match public key"'
    ]
    swapped = {"tls.crt": b64(pair.key), "tls.key": b64(pair.cert)}
    assert await write(
        "POST", SECRETS, secret(fresh(), type="kubernetes.io/tls", data=swapped)
    ) == [
        '299 - "tls: failed to find certificate PEM data in certificate input, but did find a '
        'private key; PEM inputs may have been switched"'
    ]
    placeholder = {"tls.crt": "", "tls.key": ""}
    assert await write(
        "POST", SECRETS, secret(fresh(), type="kubernetes.io/tls", data=placeholder)
    ) == ['299 - "tls: failed to find any PEM data in certificate input"']
    opaque = secret(fresh(), stringData={"tls.crt": "x", "tls.key": "y"})
    assert await write("POST", SECRETS, opaque) == []


# -- size -------------------------------------------------------------------------------


async def test_a_secret_holds_at_most_one_mib(app: ApiServer) -> None:
    name = fresh()
    full = {"a": b64(b"x" * (MIB - 10)), "b": b64(b"y" * 10)}
    status, _ = await call(app, "POST", SECRETS, secret(name, data=full))
    assert status == 201
    over = fresh()
    status, body = await call(
        app, "POST", SECRETS, secret(over, data=full, stringData={"c": "z"}), query="dryRun=All"
    )
    assert status == 422
    assert body["message"] == (
        f'Secret "{over}" is invalid: data: Too long: may not be more than 1048576 bytes'
    )
    assert body["details"]["causes"] == [
        {
            "reason": "FieldValueTooLong",
            "message": "Too long: may not be more than 1048576 bytes",
            "field": "data",
        }
    ]


async def test_a_configmap_holds_at_most_one_mib_of_data_and_binary_data(app: ApiServer) -> None:
    name = fresh("c")
    cm: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}
    cm["data"] = {"a": "é" * (MIB // 4)}  # two UTF-8 bytes each: half a MiB
    cm["binaryData"] = {"b": b64(b"\0" * (MIB // 2))}
    assert (await call(app, "POST", CONFIGMAPS, cm))[0] == 201
    status, body = await call(app, "PATCH", f"{CONFIGMAPS}/{name}", {"data": {"c": "!"}}, MERGE)
    assert status == 422
    assert body["message"] == (
        f'ConfigMap "{name}" is invalid: []: Too long: may not be more than 1048576 bytes'
    )
    assert body["details"]["causes"][0]["field"] == "[]"


# -- stringData -------------------------------------------------------------------------


async def test_string_data_is_merged_into_data_and_never_stored(app: ApiServer) -> None:
    name = fresh()
    body = secret(
        name, data={"a": b64("old"), "b": b64("kept")}, stringData={"a": "new", "c": None}
    )
    status, created = await call(app, "POST", SECRETS, body)
    assert status == 201
    assert created["data"] == {"a": b64("new"), "b": b64("kept"), "c": ""}
    assert "stringData" not in created
    status, got = await call(app, "GET", f"{SECRETS}/{name}")
    assert got["data"] == created["data"] and "stringData" not in got
    # an empty stringData adds no data map; an empty data map is not stored
    for fields in ({"stringData": {}}, {"data": {}}):
        status, created = await call(app, "POST", SECRETS, secret(fresh(), **fields))
        assert status == 201 and "data" not in created and "stringData" not in created


PATCHES = [
    ("merge", MERGE, {"stringData": {"k": "v2"}}),
    ("strategic", STRATEGIC, {"stringData": {"k": "v2"}}),
    ("json", JSON_PATCH, [{"op": "add", "path": "/stringData", "value": {"k": "v2"}}]),
]


@pytest.mark.parametrize(("ctype", "patch"), [p[1:] for p in PATCHES], ids=[p[0] for p in PATCHES])
async def test_string_data_in_a_patch(app: ApiServer, ctype: str, patch: Any) -> None:
    name = fresh()
    assert (await call(app, "POST", SECRETS, secret(name, data={"k": b64("v1")})))[0] == 201
    status, patched = await call(app, "PATCH", f"{SECRETS}/{name}", patch, ctype)
    assert status == 200, patched
    assert patched["data"] == {"k": b64("v2")} and "stringData" not in patched
    bad = {"stringData": {"bad key": "x"}}
    status, body = await call(app, "PATCH", f"{SECRETS}/{name}", bad, MERGE)
    assert status == 422 and body["details"]["causes"][0]["field"] == "data[bad key]"


async def test_string_data_in_put_and_apply(app: ApiServer) -> None:
    name = fresh()
    applied = orjson.dumps(secret(name, stringData={"k": "v"}))
    status, created = await call(
        app, "PATCH", f"{SECRETS}/{name}", applied, APPLY, "fieldManager=test"
    )
    assert status == 201 and created["data"] == {"k": b64("v")} and "stringData" not in created
    replaced = secret(name, stringData={"k": "w"}, data={"k": b64("ignored"), "x": b64("x")})
    status, put = await call(app, "PUT", f"{SECRETS}/{name}", replaced)
    assert status == 200 and put["data"] == {"k": b64("w"), "x": b64("x")}
    # an apply owns what it sent (stringData); an update what kube tracks, the merged data
    owned = {m["operation"]: m["fieldsV1"] for m in put["metadata"]["managedFields"]}
    assert owned["Apply"] == {"f:stringData": {"f:k": {}}}
    assert {"f:k", "f:x"} <= set(owned["Update"]["f:data"])
    assert "f:stringData" not in owned["Update"]


# -- typed decoding ---------------------------------------------------------------------

DECODE_ERRORS = [
    (
        "string-data-number",
        SECRETS,
        secret("d", stringData={"k": 5}),
        'Secret in version "v1" cannot be handled as a Secret: json: cannot unmarshal number '
        "into Go struct field Secret.stringData of type string",
    ),
    (
        "string-data-not-a-map",
        SECRETS,
        secret("d", stringData="k"),
        'Secret in version "v1" cannot be handled as a Secret: json: cannot unmarshal string '
        "into Go struct field Secret.stringData of type map[string]string",
    ),
    (
        "data-not-base64",
        SECRETS,
        secret("d", data={"k": "eA="}),
        'Secret in version "v1" cannot be handled as a Secret: illegal base64 data at input byte 3',
    ),
    (
        "binary-data-not-base64",
        CONFIGMAPS,
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "d"},
            "binaryData": {"k": "!"},
        },
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: '
        "illegal base64 data at input byte 0",
    ),
    (
        "service-account-secrets",
        ACCOUNTS,
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "d"}, "secrets": "x"},
        'ServiceAccount in version "v1" cannot be handled as a ServiceAccount: json: cannot '
        "unmarshal string into Go struct field ServiceAccount.secrets of type []v1.ObjectReference",
    ),
]


@pytest.mark.parametrize(
    ("path", "body", "message"), [d[1:] for d in DECODE_ERRORS], ids=[d[0] for d in DECODE_ERRORS]
)
async def test_bodies_that_do_not_decode_are_400(
    app: ApiServer, path: str, body: Any, message: str
) -> None:
    status, answer = await call(app, "POST", path, body)
    assert (status, answer["reason"], answer["message"]) == (400, "BadRequest", message)


async def test_fields_come_in_the_go_structs_order(app: ApiServer) -> None:
    body = {"type": "Opaque", "data": {"k": b64("v")}, "immutable": True, "kind": "Secret"}
    body |= {"apiVersion": "v1", "metadata": {"name": fresh()}}
    status, created = await call(app, "POST", SECRETS, body)
    assert status == 201
    assert [k for k in created if k in ("immutable", "data", "type")] == [
        "immutable",
        "data",
        "type",
    ]
    cm = {"binaryData": {"b": b64("x")}, "data": {"d": "x"}, "kind": "ConfigMap"}
    cm |= {"apiVersion": "v1", "metadata": {"name": fresh("c")}}
    status, created = await call(app, "POST", CONFIGMAPS, cm)
    assert status == 201 and list(created)[-2:] == ["data", "binaryData"]


async def test_bytes_are_stored_as_go_writes_them(app: ApiServer) -> None:
    name = fresh()
    status, created = await call(
        app, "POST", SECRETS, secret(name, data={"a": "eA\n==", "b": None})
    )
    assert status == 201 and created["data"] == {"a": "eA==", "b": ""}
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}
    cm |= {"data": {"n": None}, "binaryData": {"y": "YR=="}}
    status, created = await call(app, "POST", CONFIGMAPS, cm)
    assert status == 201 and created["data"] == {"n": ""} and created["binaryData"] == {"y": "YQ=="}


async def test_a_service_accounts_secret_references_keep_their_names_only(
    app: ApiServer,
) -> None:
    name = fresh("sa")
    refs = [{"name": "token", "namespace": "x", "uid": "u", "kind": "Secret"}, {"kind": "Secret"}]
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}}
    status, created = await call(app, "POST", ACCOUNTS, account | {"secrets": refs})
    assert status == 201 and created["secrets"] == [{"name": "token"}, {}]
    patch = {"secrets": [{"name": "other", "apiVersion": "v1"}]}
    status, patched = await call(app, "PATCH", f"{ACCOUNTS}/{name}", patch, MERGE)
    assert status == 200 and patched["secrets"] == [{"name": "other"}]


async def test_the_enforce_mountable_secrets_annotation_is_deprecated(app: ApiServer) -> None:
    async def warnings(method: str, path: str, body: Any) -> list[str]:
        ctype = MERGE if method == "PATCH" else JSON_CT
        raw = orjson.dumps(body)
        status, headers, _ = await asgi_call(app, method, path, "", {"content-type": ctype}, raw)
        assert status in (200, 201)
        return [v for k, v in headers if k == "warning"]

    deprecated = [
        '299 - "metadata.annotations[kubernetes.io/enforce-mountable-secrets]: deprecated in '
        'v1.32+; prefer separate namespaces to isolate access to mounted secrets"'
    ]
    annotated = {"annotations": {"kubernetes.io/enforce-mountable-secrets": "true"}}
    name = fresh("sa")
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}}
    assert await warnings("POST", ACCOUNTS, account) == []
    assert await warnings("PATCH", f"{ACCOUNTS}/{name}", {"metadata": annotated}) == deprecated
    # already there: an update that keeps it is not warned again
    assert await warnings("PATCH", f"{ACCOUNTS}/{name}", {"metadata": {"labels": {"a": "b"}}}) == []
    other = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": fresh("sa")}}
    other["metadata"] |= annotated
    assert await warnings("POST", ACCOUNTS, other) == deprecated


async def test_token_requests_are_checked_in_kubes_order(app: ApiServer) -> None:
    """TokenREST.Create: the body's name, then its namespace, then the ServiceAccount,
    then ValidateTokenRequest (reported for the name ""); a bound Pod must run as the
    ServiceAccount; a bound object's uid must be the stored one."""
    name = fresh("sa")
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}}
    assert (await call(app, "POST", ACCOUNTS, account))[0] == 201
    token = f"{ACCOUNTS}/{name}/token"
    both = {"metadata": {"name": "x", "namespace": "y"}, "spec": {"expirationSeconds": 1}}
    status, body = await call(app, "POST", token, both)
    assert (status, body["message"]) == (
        422,
        f'TokenRequest.authentication.k8s.io "{name}" is invalid: metadata.name: Invalid '
        'value: "x": must match the service account name if specified',
    )
    short = {"spec": {"expirationSeconds": 1}}
    status, body = await call(app, "POST", f"{ACCOUNTS}/ghost/token", short)
    assert (status, body["message"]) == (404, 'serviceaccounts "ghost" not found')
    status, body = await call(app, "POST", token, short)
    assert (status, body["message"]) == (
        422,
        'TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid '
        "value: 1: may not specify a duration less than 10 minutes",
    )
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": fresh("p")}}
    pod["spec"] = {"containers": [{"name": "c", "image": "i"}], "serviceAccountName": "other"}
    status, created = await call(app, "POST", "/api/v1/namespaces/default/pods", pod)
    assert status == 201, created
    ref = {"apiVersion": "v1", "kind": "Pod", "name": pod["metadata"]["name"]}
    status, body = await call(app, "POST", token, {"spec": {"boundObjectRef": ref}})
    assert (status, body["message"]) == (
        400,
        f'cannot bind token for serviceaccount "{name}" to pod running with different '
        "serviceaccount name.",
    )
    secret_name = fresh()
    assert (await call(app, "POST", SECRETS, secret(secret_name)))[0] == 201
    ref = {"apiVersion": "v1", "kind": "Secret", "name": secret_name, "uid": "not-it"}
    status, body = await call(app, "POST", token, {"spec": {"boundObjectRef": ref}})
    assert (status, body["message"]) == (
        409,
        f'Operation cannot be fulfilled on Secret "{secret_name}": the UID in the bound '
        "object reference (not-it) does not match the UID in record. The object might have "
        "been deleted and then recreated",
    )


# -- Go's encoding/json, as the docker config check words it ----------------------------

GO_JSON = [
    (b"", "unexpected end of JSON input"),
    (b"x", "invalid character 'x' looking for beginning of value"),
    (b'{"a" 1}', "invalid character '1' after object key"),
    (b'{"a":1 2}', "invalid character '2' after object key:value pair"),
    (b'{"a":[1 2]}', "invalid character '2' after array element"),
    (b"{} x", "invalid character 'x' after top-level value"),
    (b"01", "invalid character '1' after top-level value"),
    (b"-", "invalid character ' ' in numeric literal"),
    (b"1.", "invalid character ' ' after decimal point in numeric literal"),
    (b"1e+", "invalid character ' ' in exponent of numeric literal"),
    (b"tru", "invalid character ' ' in literal true (expecting 'e')"),
    (b"nUll", "invalid character 'U' in literal null (expecting 'u')"),
    (b'"\\q"', "invalid character 'q' in string escape code"),
    (b'"\\u12g4"', "invalid character 'g' in \\u hexadecimal character escape"),
    (b'"a\x01"', "invalid character '\\x01' in string literal"),
    (b"'", "invalid character '\\'' looking for beginning of value"),
    (b"\xc3\xa9", "invalid character 'Ã' looking for beginning of value"),
    (b"[" * 10001, "invalid character '[' exceeded max depth"),
    (b"12", "json: cannot unmarshal number into Go value of type map[string]interface {}"),
    (b' "s"', "json: cannot unmarshal string into Go value of type map[string]interface {}"),
    (b"false", "json: cannot unmarshal bool into Go value of type map[string]interface {}"),
    (b" null ", None),
    (b'{"auths": {"x": {"auth": "\\u00e9"}}}', None),
]


@pytest.mark.parametrize(("data", "error"), GO_JSON, ids=[f"case{i}" for i in range(len(GO_JSON))])
def test_go_json_errors(data: bytes, error: str | None) -> None:
    assert map_unmarshal_error(data) == error


GO_BASE64 = [
    ("eA==", b"x"),
    ("eA\r\n==", b"x"),
    ("YR==", b"a"),
    ("eA=", "illegal base64 data at input byte 3"),
    ("eA", "illegal base64 data at input byte 0"),
    ("eA=x", "illegal base64 data at input byte 2"),
    ("eA==eA==", "illegal base64 data at input byte 4"),
    ("e A=", "illegal base64 data at input byte 1"),
]


@pytest.mark.parametrize(
    ("text", "want"), GO_BASE64, ids=[f"case{i}" for i in range(len(GO_BASE64))]
)
def test_go_base64(text: str, want: bytes | str) -> None:
    if isinstance(want, bytes):
        assert decode_bytes(text) == want
    else:
        with pytest.raises(Base64Error) as caught:
            decode_bytes(text)
        assert str(caught.value) == want


def test_pem_blocks_as_go_reads_them() -> None:
    blocks = (
        b"junk\n-----BEGIN X-----\n-----END X-----\n"
        b"-----BEGIN Y-----\nK: v\n\neA==\n-----END Y-----"
    )
    assert pem_blocks(blocks) == [("X", b""), ("Y", b"x")]
    assert x509_key_pair_error(blocks, b"") == (
        'tls: failed to find "CERTIFICATE" PEM block in certificate input after skipping PEM '
        "blocks of the following types: [X Y]"
    )
    # an END line naming another type, or with text after it, ends no block
    assert pem_blocks(b"-----BEGIN X-----\neA==\n-----END Z-----\n") == []
    assert pem_blocks(b"-----BEGIN X-----\neA==\n-----END X----- tail\n") == []
