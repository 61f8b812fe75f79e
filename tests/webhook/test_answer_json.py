"""The app writes admission answers with ``admission_json`` and awaits the endpoint's
``decide`` directly: the bytes must be exactly those of ``orjson.dumps`` of
``admission_response`` (what ``AdmissionEndpoint.review`` answers), for hostile uids and
patches and every verdict shape, the fast pieces and the fallback alike."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from kubewerk.core.errors import FieldError
from kubewerk.webhook import AdmissionRequest, Allowed, Denied, Patch, WebhookApp
from kubewerk.webhook.review import ADMISSION_VERSIONS, admission_json, admission_response

from .conftest import asgi_call, database, kube_review
from .models import Database

UIDS = [
    "5f2b8f5e-0000-4000-8000-000000000001",
    "",
    'a"b\\c/d',
    "line\nbreak\ttab\x00nul\x1fus\x7fdel",
    "é😀\u2028\u2029\ufeff",
    "x" * 10_000,
]


class _MyAllowed(Allowed):
    pass


VERDICTS: list[Allowed | Denied] = [
    Allowed(),
    Allowed(warnings=["careful"]),
    Allowed(audit_annotations={"k": "v"}),
    _MyAllowed(),
    Denied("no"),
    Denied("bad", 422, "Invalid", [FieldError.invalid("spec.x", 1, "too big")]),
]
VERDICT_IDS = ["allowed", "warnings", "annotations", "subclass", "denied", "causes"]


@pytest.mark.parametrize("verdict", VERDICTS, ids=VERDICT_IDS)
@pytest.mark.parametrize("api_version", [*ADMISSION_VERSIONS, "other.k8s.io/v1", ""])
def test_bytes_equal_the_encoded_response(verdict: Allowed | Denied, api_version: str) -> None:
    for uid in UIDS:
        for patch in (None, "W10=", 'q"\\\n😀'):
            want = orjson.dumps(admission_response(api_version, uid, verdict, patch))
            assert admission_json(api_version, uid, verdict, patch) == want, (uid, patch)


class _Version(str):
    pass


@pytest.mark.parametrize(
    "api_version", [_Version("admission.k8s.io/v1"), None], ids=["str-subclass", "none"]
)
def test_unusual_arguments_take_the_encoder(api_version: Any) -> None:
    want = orjson.dumps(admission_response(api_version, "u", Allowed(), "p"))
    assert admission_json(api_version, "u", Allowed(), "p") == want


@pytest.mark.parametrize("where", ["uid", "patch"])
def test_unencodable_values_raise_as_the_encoder_does(where: str) -> None:
    uid: Any = object() if where == "uid" else "u"
    patch: Any = object() if where == "patch" else "p"
    with pytest.raises(orjson.JSONEncodeError) as want:
        orjson.dumps(admission_response("admission.k8s.io/v1", uid, Allowed(), patch))
    with pytest.raises(orjson.JSONEncodeError) as got:
        admission_json("admission.k8s.io/v1", uid, Allowed(), patch)
    assert str(got.value) == str(want.value)


def _app() -> WebhookApp:
    app = WebhookApp()

    @app.validating(Database, "/check")
    async def check(db: Database, old: Database | None, req: AdmissionRequest) -> Any:
        return {
            "ok": Allowed(),
            "warn": Allowed(warnings=["w"]),
            "deny": Denied("no"),
            "boom": None,
        }[db.spec.engine] or 1 / 0

    @app.mutating(Database, "/mutate")
    def default(db: Database, old: Database | None, req: AdmissionRequest) -> Any:
        if db.spec.engine == "deny":
            return Denied("no")
        db.spec.replicas = 3
        return None

    @app.patching(Database, "/patch")
    async def fast(db: Database, old: Database | None, req: AdmissionRequest, patch: Patch) -> Any:
        if db.spec.engine == "boom":
            raise RuntimeError("broken")
        patch.set(("spec", "replicas"), 2)
        return Allowed(warnings=["w"]) if db.spec.engine == "warn" else None

    return app


@pytest.mark.parametrize("path", ["/check", "/mutate", "/patch"])
@pytest.mark.parametrize("engine", ["ok", "warn", "deny", "boom"])
@pytest.mark.parametrize("operation", ["CREATE", "UPDATE", "DELETE", "CONNECT"])
@pytest.mark.parametrize("api_version", ADMISSION_VERSIONS)
async def test_the_app_answers_what_review_answers(
    path: str, engine: str, operation: str, api_version: str
) -> None:
    app = _app()
    obj = database(engine=engine)
    body = kube_review(
        operation,
        None if operation == "DELETE" else obj,
        obj if operation in ("UPDATE", "DELETE") else None,
        api_version=api_version,
    )
    answer = await asgi_call(app, path, body)
    assert answer.status == 200
    assert answer.body == orjson.dumps(await app.endpoints[path].review(body))
    assert answer.headers["content-length"] == str(len(answer.body))


async def test_an_answer_that_cannot_be_encoded_is_a_500_status() -> None:
    # the module's promise: an unexpected error is a 500 Status with a one-line message
    # (the answer used to be encoded outside the app's guard: the error escaped to the
    # ASGI server)
    app = WebhookApp()

    @app.validating(Database, "/odd")
    async def odd(db: Database, old: Database | None, req: AdmissionRequest) -> Allowed:
        return Allowed(audit_annotations={"k": object()})  # type: ignore[dict-item]

    answer = await asgi_call(app, "/odd", kube_review("CREATE", database()))
    assert answer.status == 500
    status = answer.json()
    assert status["kind"] == "Status" and status["code"] == 500
    assert (
        status["message"]
        == "Internal error occurred: TypeError: Type is not JSON serializable: object"
    )
    assert app.metrics.path("/odd").codes[500] == 1.0
