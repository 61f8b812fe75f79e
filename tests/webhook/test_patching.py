"""The patching contract (``app.patching``): the handler states its changes in a ``Patch``
and the server answers exactly those — through the whole AdmissionReview envelope of the
ASGI app, and as kube-apiserver's side checks and applies the answer (the embedded
server's ``VerifyAdmissionResponse`` and patch application, called in process)."""

from __future__ import annotations

import base64
import copy
import logging
from typing import Any

import orjson
import pytest

from kubewerk.apiserver.admission_chain.webhooks import apply_patch, decode_answer, verify
from kubewerk.webhook import AdmissionEndpoint, AdmissionRequest, Allowed, Denied, Patch, WebhookApp

from .conftest import asgi_call, database, kube_review, review
from .models import Database

MUTATE = "/mutate-webhook-test-kubewerk-dev-v1-database"


def ops_of(response: dict[str, Any]) -> list[dict[str, Any]]:
    assert response["patchType"] == "JSONPatch"
    ops: list[dict[str, Any]] = orjson.loads(base64.b64decode(response["patch"]))
    return ops


def defaulting_app() -> WebhookApp:
    app = WebhookApp()

    @app.patching(Database)
    async def default(
        db: Database, old: Database | None, req: AdmissionRequest, patch: Patch
    ) -> None:
        if db.spec.replicas is None:
            patch.set(("spec", "replicas"), 1)
        patch.set_label("app.kubernetes.io/managed-by", "kubewerk")
        if db.spec.tags is not None and "db" not in db.spec.tags:
            patch.append(("spec", "tags"), "db")

    return app


async def test_the_recorded_operations_are_the_answer() -> None:
    app = defaulting_app()
    obj = database(tags=["a"])
    obj["metadata"]["labels"] = {"team": "a/b~c"}
    obj["spec"]["unknownField"] = {"kept": True}  # a field the model does not know
    body = kube_review("CREATE", obj)
    before = copy.deepcopy(body)
    r = await review(app, MUTATE, body)
    assert r["allowed"] is True
    assert ops_of(r) == [
        {"op": "add", "path": "/spec/replicas", "value": 1},
        {
            "op": "add",
            "path": "/metadata/labels/app.kubernetes.io~1managed-by",
            "value": "kubewerk",
        },
        {"op": "add", "path": "/spec/tags/1", "value": "db"},
    ]
    assert body == before  # the received review is not changed

    # kube-apiserver's side: the answer passes its checks, the patch applies, and the
    # result is a valid Database
    answer = verify(
        decode_answer(
            orjson.dumps(
                {"apiVersion": body["apiVersion"], "kind": "AdmissionReview", "response": r}
            ),
            "v1",
        ),
        body["request"]["uid"],
        "v1",
        True,
    )
    assert answer.allowed and answer.patch is not None
    patched = apply_patch(obj, answer.patch)
    assert patched["spec"] == {
        "engine": "postgres",
        "tags": ["a", "db"],
        "unknownField": {"kept": True},
        "replicas": 1,
    }
    assert patched["metadata"]["labels"] == {
        "team": "a/b~c",
        "app.kubernetes.io/managed-by": "kubewerk",
    }
    assert patched["metadata"]["managedFields"] == obj["metadata"]["managedFields"]
    assert Database.from_dict(patched).spec.replicas == 1

    # the same handler on the patched object: nothing left to change, no patch
    r = await review(app, MUTATE, kube_review("UPDATE", patched, obj))
    assert r == {"uid": r["uid"], "allowed": True}


async def test_labels_map_created_when_absent_and_replace_when_present() -> None:
    app = defaulting_app()
    obj = database(replicas=3)
    r = await review(app, MUTATE, kube_review("CREATE", obj))
    assert ops_of(r) == [
        {
            "op": "add",
            "path": "/metadata/labels",
            "value": {"app.kubernetes.io/managed-by": "kubewerk"},
        }
    ]
    obj["metadata"]["labels"] = {"app.kubernetes.io/managed-by": "someone"}
    r = await review(app, MUTATE, kube_review("CREATE", obj))
    assert ops_of(r) == [
        {
            "op": "replace",
            "path": "/metadata/labels/app.kubernetes.io~1managed-by",
            "value": "kubewerk",
        }
    ]


async def test_verdicts_warnings_delete_and_typed_changes() -> None:
    app = WebhookApp()
    seen: list[tuple[str, bool, bool]] = []

    @app.patching(Database, "/warn")
    def warn(db: Database, old: Database | None, req: AdmissionRequest, patch: Patch) -> Allowed:
        seen.append((req.operation, old is not None, req.dry_run))
        patch.set_annotation("example.com/seen", "yes")
        return Allowed(warnings=["annotated"], audit_annotations={"a": "b"})

    @app.patching(Database, "/deny")
    async def deny(
        db: Database, old: Database | None, req: AdmissionRequest, patch: Patch
    ) -> Denied:
        patch.set(("spec", "replicas"), 5)  # a denial sends no patch
        return Denied("no", 422, "Invalid")

    @app.patching(Database, "/typed")
    async def typed(
        db: Database, old: Database | None, req: AdmissionRequest, patch: Patch
    ) -> None:
        db.spec.replicas = 7  # changes to the typed object are NOT sent

    obj = database()
    r = await review(app, "/warn", kube_review("CREATE", obj))
    assert r["warnings"] == ["annotated"] and r["auditAnnotations"] == {"a": "b"}
    assert ops_of(r) == [
        {"op": "add", "path": "/metadata/annotations", "value": {"example.com/seen": "yes"}}
    ]
    r = await review(app, "/warn", kube_review("UPDATE", obj, database(), dry_run=True))
    assert r["allowed"] is True and "patch" in r
    r = await review(app, "/warn", kube_review("DELETE", None, obj))
    assert r["allowed"] is True and "patch" not in r and "patchType" not in r
    assert seen == [("CREATE", False, False), ("UPDATE", True, True), ("DELETE", False, False)]
    r = await review(app, "/deny", kube_review("CREATE", obj))
    assert r["allowed"] is False and r["status"]["code"] == 422 and "patch" not in r
    r = await review(app, "/typed", kube_review("CREATE", obj))
    assert r == {"uid": r["uid"], "allowed": True}


async def test_side_effects_refuse_dry_run() -> None:
    app = WebhookApp()
    calls: list[bool] = []

    @app.patching(Database, "/effects", side_effects=True)
    async def effects(
        db: Database, old: Database | None, req: AdmissionRequest, patch: Patch
    ) -> None:
        calls.append(req.dry_run)

    r = await review(app, "/effects", kube_review("CREATE", database(), dry_run=True))
    assert r["allowed"] is False and r["status"]["code"] == 400
    assert "has side effects and does not admit dry-run requests" in r["status"]["message"]
    assert calls == []
    assert (await review(app, "/effects", kube_review("CREATE", database())))["allowed"]
    assert calls == [False]


async def test_bad_patches_are_internal_denials_naming_the_handler(
    caplog: pytest.LogCaptureFixture,
) -> None:
    app = WebhookApp()

    @app.patching(Database, "/missing")
    async def missing(
        db: Database, old: Database | None, req: AdmissionRequest, patch: Patch
    ) -> None:
        patch.replace(("spec", "backup", "keep"), 3)

    @app.patching(Database, "/wrong")
    async def wrong(db: Database, old: Database | None, req: AdmissionRequest, patch: Patch) -> Any:
        return db  # a patching handler does not return the object

    @app.patching(Database, "/changed-under")
    async def changed_under(
        db: Database, old: Database | None, req: AdmissionRequest, patch: Patch
    ) -> None:
        patch.replace(("spec", "engine"), "mysql")
        assert req.object is not None
        del req.object["spec"]["engine"]  # the received JSON changed after recording

    with caplog.at_level(logging.ERROR, "kubewerk.webhook"):
        r = await review(app, "/missing", kube_review("CREATE", database()))
    assert r["allowed"] is False and "patch" not in r
    assert r["status"]["code"] == 500 and r["status"]["reason"] == "InternalError"
    assert r["status"]["message"] == (
        "Internal error occurred: admission handler "
        "test_bad_patches_are_internal_denials_naming_the_handler.<locals>.missing: "
        "PatchOperationError: cannot replace /spec/backup/keep: /spec/backup does not exist"
    )
    assert "Traceback" not in r["status"]["message"]
    assert any(rec.exc_info for rec in caplog.records)  # the traceback is logged
    r = await review(app, "/wrong", kube_review("CREATE", database()))
    assert r["status"]["code"] == 500 and r["status"]["message"].endswith(
        ".<locals>.wrong: returned Database, not None, Allowed or Denied"
    )
    r = await review(app, "/changed-under", kube_review("CREATE", database()))
    assert r["status"]["code"] == 500 and "patch" not in r
    assert r["status"]["message"].endswith(
        ".<locals>.changed_under: its JSON Patch does not apply to the received object"
    )


def test_registration() -> None:
    app = defaulting_app()
    endpoint = app.endpoints[MUTATE]
    assert isinstance(endpoint, AdmissionEndpoint)
    assert endpoint.mutating is True and endpoint.patching is True
    with pytest.raises(ValueError, match="already registered"):
        app.mutating(Database)(lambda *a: None)  # the same default path
    with pytest.raises(ValueError, match="pass mutating=True"):
        AdmissionEndpoint("/x", Database, lambda *a: None, False, False, patching=True)


async def test_counted_like_the_other_handlers() -> None:
    app = defaulting_app()
    await review(app, MUTATE, kube_review("CREATE", database()))
    await review(app, MUTATE, kube_review("CREATE", database()))
    assert (await asgi_call(app, MUTATE, b"nope")).status == 400
    totals = {}
    for family in app.metrics.registry.collect():
        for s in family.samples:
            if s.name == "controller_runtime_webhook_requests_total":
                totals[(s.labels["webhook"], s.labels["code"])] = s.value
    assert totals[(MUTATE, "200")] == 2 and totals[(MUTATE, "400")] == 1
