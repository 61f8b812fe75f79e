"""Admission reviews through the ASGI app, in process: verdicts, patches, and every
malformed request answered without a traceback."""

from __future__ import annotations

import base64
import copy
import logging
from typing import Any

import orjson
import pytest

from kubewerk.core.patch import json_patch
from kubewerk.webhook import AdmissionRequest, Allowed, Denied, WebhookApp

from .conftest import asgi_call, database, kube_review, review
from .models import Database, make_app

VALIDATE = "/validate-webhook-test-kubewerk-dev-v1-database"
MUTATE = "/mutate-webhook-test-kubewerk-dev-v1-database"


@pytest.fixture
def app() -> WebhookApp:
    return make_app()


async def test_allowed_with_warnings_and_audit_annotations(app: WebhookApp) -> None:
    r = await review(app, VALIDATE, kube_review("CREATE", database()))
    assert r == {
        "uid": r["uid"],
        "allowed": True,
        "warnings": ["no backup configured"],
        "auditAnnotations": {"engine": "postgres"},
    }


async def test_denied_with_message_code_reason(app: WebhookApp) -> None:
    r = await review(app, VALIDATE, kube_review("CREATE", database(engine="oracle")))
    assert r["allowed"] is False
    assert r["status"] == {
        "metadata": {},
        "status": "Failure",
        "message": "engine 'oracle' is not supported",
        "reason": "Forbidden",
        "code": 403,
    }
    assert r["warnings"] == ["no backup configured"]
    assert "patch" not in r


async def test_update_gets_old_object(app: WebhookApp) -> None:
    old, new = database(), database(engine="mysql")
    r = await review(app, VALIDATE, kube_review("UPDATE", new, old))
    assert r["allowed"] is False and r["status"]["message"] == "spec.engine is immutable"
    assert r["status"]["code"] == 422


async def test_delete_sees_the_deleted_object(app: WebhookApp) -> None:
    old = database()
    old["metadata"]["labels"] = {"protected": "true"}
    r = await review(app, VALIDATE, kube_review("DELETE", None, old))
    assert r["status"]["message"] == "database db is protected"
    old["metadata"]["labels"] = {}
    assert (await review(app, VALIDATE, kube_review("DELETE", None, old)))["allowed"] is True


async def test_v1beta1_reviews_are_answered_in_v1beta1(app: WebhookApp) -> None:
    body = kube_review("CREATE", database(), api_version="admission.k8s.io/v1beta1")
    r = await review(app, VALIDATE, body)
    assert r["allowed"] is True


async def test_invalid_object_gives_field_errors(app: WebhookApp) -> None:
    obj = database(replicas=12, storageGi="ten")
    r = await review(app, VALIDATE, kube_review("CREATE", obj))
    status = r["status"]
    assert r["allowed"] is False and status["code"] == 422 and status["reason"] == "Invalid"
    assert status["message"].startswith('Database.webhook.test.kubewerk.dev "db" is invalid: [')
    fields = sorted(c["field"] for c in status["details"]["causes"])
    assert fields == ["spec.replicas", "spec.storageGi"]
    assert all(
        c["reason"] in ("FieldValueInvalid", "FieldValueTypeInvalid")
        for c in status["details"]["causes"]
    )


async def test_kind_mismatch_is_a_clear_denial(app: WebhookApp) -> None:
    body = kube_review("CREATE", database(), version="v1alpha1")
    r = await review(app, VALIDATE, body)
    assert r["allowed"] is False and r["status"]["code"] == 400
    assert r["status"]["message"] == (
        f"webhook {VALIDATE} admits webhook.test.kubewerk.dev/v1, Kind=Database objects, but "
        "the request is for webhook.test.kubewerk.dev/v1alpha1, Kind=Database (check the "
        "webhook configuration's rules and matchPolicy)"
    )
    body = kube_review("CREATE", database(), kind="Table", resource="tables")
    assert (await review(app, VALIDATE, body))["status"]["code"] == 400


async def test_mutation_is_a_json_patch_against_the_received_object(app: WebhookApp) -> None:
    obj = database()
    obj["metadata"]["labels"] = {"team": "a/b~c"}
    obj["spec"]["unknownField"] = {"kept": True}  # a field the model does not know
    r = await review(app, MUTATE, kube_review("CREATE", obj))
    assert r["allowed"] is True and r["patchType"] == "JSONPatch"
    ops = orjson.loads(base64.b64decode(r["patch"]))
    assert sorted(op["path"] for op in ops) == [
        "/metadata/labels/app.kubernetes.io~1managed-by",
        "/spec/replicas",
    ]
    patched = json_patch(obj, ops)
    assert patched["spec"] == {"engine": "postgres", "replicas": 1, "unknownField": {"kept": True}}
    assert patched["metadata"]["labels"] == {
        "team": "a/b~c",
        "app.kubernetes.io/managed-by": "kubewerk",
    }
    assert patched["metadata"]["managedFields"] == obj["metadata"]["managedFields"]


async def test_mutation_without_change_sends_no_patch(app: WebhookApp) -> None:
    obj = database(replicas=2)
    obj["metadata"]["labels"] = {"app.kubernetes.io/managed-by": "kubewerk"}
    r = await review(app, MUTATE, kube_review("CREATE", obj))
    assert r == {"uid": r["uid"], "allowed": True}


async def test_mutator_variants() -> None:
    app = WebhookApp()

    @app.mutating(Database, "/replace")
    def replace(db: Database, old: Database | None, req: AdmissionRequest) -> Database:
        new = db.model_copy(deep=True)
        new.spec.tags = ["a", "b"]
        return new

    @app.mutating(Database, "/deny")
    async def deny(db: Database, old: Database | None, req: AdmissionRequest) -> Denied:
        db.spec.replicas = 5  # changes of a denied request are not sent
        return Denied("no")

    @app.mutating(Database, "/warn")
    async def warn(db: Database, old: Database | None, req: AdmissionRequest) -> Allowed:
        db.spec.options = {"a/b": "1"}
        return Allowed(warnings=["defaulted options"])

    obj = database(tags=["a"])
    r = await review(app, "/replace", kube_review("CREATE", obj))
    assert json_patch(obj, orjson.loads(base64.b64decode(r["patch"])))["spec"]["tags"] == ["a", "b"]
    r = await review(app, "/deny", kube_review("CREATE", obj))
    assert r["allowed"] is False and "patch" not in r
    r = await review(app, "/warn", kube_review("CREATE", obj))
    assert r["warnings"] == ["defaulted options"]
    assert json_patch(obj, orjson.loads(base64.b64decode(r["patch"])))["spec"]["options"] == {
        "a/b": "1"
    }
    # a DELETE has no object to patch
    r = await review(app, "/warn", kube_review("DELETE", None, obj))
    assert r["allowed"] is True and "patch" not in r


async def test_dry_run_and_side_effects() -> None:
    app = WebhookApp()
    calls: list[bool] = []

    @app.validating(Database, "/effects", side_effects=True)
    async def effects(db: Database, old: Database | None, req: AdmissionRequest) -> Allowed:
        calls.append(req.dry_run)
        return Allowed()

    @app.validating(Database, "/pure")
    async def pure(db: Database, old: Database | None, req: AdmissionRequest) -> Allowed:
        calls.append(req.dry_run)
        return Allowed()

    r = await review(app, "/effects", kube_review("CREATE", database(), dry_run=True))
    assert r["allowed"] is False and r["status"]["code"] == 400
    assert "has side effects and does not admit dry-run requests" in r["status"]["message"]
    assert calls == []
    assert (await review(app, "/effects", kube_review("CREATE", database())))["allowed"]
    assert (await review(app, "/pure", kube_review("CREATE", database(), dry_run=True)))["allowed"]
    assert calls == [False, True]


async def test_handler_errors_are_internal_denials(caplog: pytest.LogCaptureFixture) -> None:
    app = WebhookApp()

    @app.validating(Database, "/boom")
    async def boom(db: Database, old: Database | None, req: AdmissionRequest) -> Allowed:
        raise KeyError("replicas")

    @app.validating(Database, "/wrong")
    async def wrong(db: Database, old: Database | None, req: AdmissionRequest) -> Any:
        return True

    with caplog.at_level(logging.ERROR, "kubewerk.webhook"):
        r = await review(app, "/boom", kube_review("CREATE", database()))
    assert r["allowed"] is False
    assert r["status"]["code"] == 500 and r["status"]["reason"] == "InternalError"
    assert r["status"]["message"] == (
        "Internal error occurred: admission handler "
        "test_handler_errors_are_internal_denials.<locals>.boom: KeyError: 'replicas'"
    )
    assert "Traceback" not in r["status"]["message"]
    assert any(rec.exc_info for rec in caplog.records)  # the traceback is logged
    r = await review(app, "/wrong", kube_review("CREATE", database()))
    assert (
        r["status"]["code"] == 500
        and "returned bool, not Allowed or Denied" in r["status"]["message"]
    )


def _without(path: str) -> dict[str, Any]:
    body = kube_review("CREATE", database())
    node: Any = body
    *parents, last = path.split(".")
    for p in parents:
        node = node[p]
    del node[last]
    return body


def _with(path: str, value: Any) -> dict[str, Any]:
    body = kube_review("CREATE", database())
    node: Any = body
    *parents, last = path.split(".")
    for p in parents:
        node = node[p]
    node[last] = value
    return body


# (name, body, HTTP status, words in the Status message)
MALFORMED: list[tuple[str, bytes | dict[str, Any], int, str]] = [
    ("empty body", b"", 400, "the request body is empty"),
    ("not json", b"{not json", 400, "the request body is not JSON"),
    ("json array", b"[1, 2]", 400, "is a JSON array, not an object"),
    ("json string", b'"AdmissionReview"', 400, "is a JSON string, not an object"),
    ("too deep", b'{"a":' * 200 + b"1" + b"}" * 200, 400, "nests deeper than 103 levels"),
    ("too deep for orjson", b"[" * 2000 + b"]" * 2000, 400, "nests deeper than 103 levels"),
    (
        "wrong apiVersion",
        _with("apiVersion", "admission.k8s.io/v2"),
        400,
        "expected an AdmissionReview of admission.k8s.io/v1 or admission.k8s.io/v1beta1, "
        "got apiVersion='admission.k8s.io/v2' kind='AdmissionReview'",
    ),
    ("wrong kind", _with("kind", "ConversionReview"), 400, "kind='ConversionReview'"),
    ("no request", _without("request"), 400, "the AdmissionReview has no request"),
    ("request not object", _with("request", [1]), 400, "request must be an object"),
    ("no uid", _without("request.uid"), 400, "request.uid is missing"),
    ("uid not string", _with("request.uid", 7), 400, "request.uid must be a string"),
    (
        "bad operation",
        _with("request.operation", "PATCH"),
        400,
        "request.operation must be one of CREATE, UPDATE, DELETE, CONNECT, not 'PATCH'",
    ),
    ("no kind", _without("request.kind"), 400, "request.kind is missing"),
    ("kind not object", _with("request.kind", "Database"), 400, "request.kind must be an object"),
    ("no resource", _without("request.resource"), 400, "request.resource is missing"),
    ("dryRun not bool", _with("request.dryRun", "yes"), 400, "request.dryRun must be a boolean"),
    (
        "object not object",
        _with("request.object", "x"),
        400,
        "request.object must be a JSON object or null",
    ),
    (
        "groups not list",
        _with("request.userInfo.groups", "admins"),
        400,
        "request.userInfo.groups must be a list of strings",
    ),
    ("name not string", _with("request.name", 1), 400, "request.name must be a string"),
]


@pytest.mark.parametrize(
    ("name", "body", "status", "words"), MALFORMED, ids=[m[0] for m in MALFORMED]
)
async def test_malformed_reviews(
    app: WebhookApp, name: str, body: Any, status: int, words: str
) -> None:
    answer = await asgi_call(app, VALIDATE, body)
    assert answer.status == status
    out = answer.json()
    assert out["kind"] == "Status" and out["status"] == "Failure" and out["code"] == status
    assert words in out["message"], out["message"]


async def test_content_problems_are_200_denials(app: WebhookApp) -> None:
    """Reviews kube-apiserver could send, whose content the handler cannot admit."""
    cases = [
        (_with("request.object", None), "request.object is missing for a CREATE request"),
        (_with("request.operation", "CONNECT"), "does not admit CONNECT requests"),
        (_with("request.object", {"apiVersion": "x", "metadata": "nope"}), "is invalid"),
    ]
    for body, words in cases:
        r = await review(app, VALIDATE, body)
        assert r["allowed"] is False and words in r["status"]["message"]


async def test_http_level_refusals(app: WebhookApp) -> None:
    body = kube_review("CREATE", database())
    a = await asgi_call(app, "/nowhere", body)
    assert a.status == 404 and a.json()["reason"] == "NotFound"
    a = await asgi_call(app, VALIDATE, body, method="GET")
    assert a.status == 405 and a.headers["allow"] == "POST"
    a = await asgi_call(app, VALIDATE, body, content_type=b"application/yaml")
    assert a.status == 415 and "webhooks take application/json" in a.json()["message"]
    a = await asgi_call(app, VALIDATE, body, content_type=b"application/json; charset=utf-8")
    assert a.status == 200
    a = await asgi_call(app, VALIDATE, body, chunks=7)  # a body in pieces
    assert a.status == 200 and a.json()["response"]["allowed"] is True


async def test_body_size_limit() -> None:
    app = WebhookApp()

    @app.validating(Database, "/small", max_body_bytes=2048)
    async def small(db: Database, old: Database | None, req: AdmissionRequest) -> Allowed:
        return Allowed()

    body = kube_review("CREATE", database(options={"k": "x" * 4096}))
    a = await asgi_call(app, "/small", body)
    assert a.status == 413 and a.json()["reason"] == "RequestEntityTooLarge"
    assert (
        a.json()["message"] == "the request body is larger than this webhook's limit of 2048 bytes"
    )
    a = await asgi_call(app, "/small", body, chunks=10)  # counted as it arrives too
    assert a.status == 413
    assert (await asgi_call(app, "/small", kube_review("CREATE", database()))).status == 200


def test_registration_mistakes() -> None:
    app = make_app()
    with pytest.raises(ValueError, match="already registered"):
        app.conversion("/convert")
    with pytest.raises(ValueError, match="must start with '/'"):
        app.validating(Database, "validate")(lambda *a: Allowed())
    with pytest.raises(ValueError, match="an HTTP error status"):
        Denied("x", code=200)
    with pytest.raises(TypeError, match="not one string"):
        Allowed(warnings="careful")


async def test_the_received_review_is_not_changed(app: WebhookApp) -> None:
    body = kube_review("UPDATE", database(), database(replicas=2))
    before = copy.deepcopy(body)
    await review(app, MUTATE, body)
    assert body == before


@pytest.mark.parametrize(
    ("operation", "bad"),
    [("CREATE", "object"), ("UPDATE", "object"), ("UPDATE", "oldObject"), ("DELETE", "oldObject")],
)
async def test_a_refused_object_is_named_by_its_field(
    app: WebhookApp, operation: str, bad: str
) -> None:
    good, wrong = database(), database(replicas="three")
    obj = None if operation == "DELETE" else (wrong if bad == "object" else good)
    old = None if operation == "CREATE" else (wrong if bad == "oldObject" else good)
    r = await review(app, VALIDATE, kube_review(operation, obj, old))
    status = r["status"]
    assert r["allowed"] is False and status["code"] == 422 and status["reason"] == "Invalid"
    invalid = 'Database.webhook.test.kubewerk.dev "db" is invalid: spec.replicas: '
    prefix = "" if bad == "object" else "request.oldObject: "
    assert status["message"].startswith(prefix + invalid), status["message"]
    assert [c["field"] for c in status["details"]["causes"]] == ["spec.replicas"]
