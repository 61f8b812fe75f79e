"""ConversionReviews through the app: every version pair, lists, lossless round trips,
metadata kept as kube-apiserver requires, all-or-nothing failures."""

from __future__ import annotations

import copy
import uuid
from typing import Any

import pytest

from kubewerk.webhook import WebhookApp

from .conftest import asgi_call
from .models import GROUP, LOST, Database, make_app

V1 = f"{GROUP}/v1"
V1ALPHA1 = f"{GROUP}/v1alpha1"


@pytest.fixture
def app() -> WebhookApp:
    return make_app()


def conversion_review(
    objects: list[Any], desired: str, api_version: str = "apiextensions.k8s.io/v1"
) -> dict[str, Any]:
    """As kube-apiserver's webhook converter builds it."""
    return {
        "kind": "ConversionReview",
        "apiVersion": api_version,
        "request": {"uid": str(uuid.uuid4()), "desiredAPIVersion": desired, "objects": objects},
    }


def v1(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": V1,
        "kind": "Database",
        "metadata": {
            "name": name,
            "namespace": "prod",
            "uid": f"uid-{name}",
            "resourceVersion": "42",
            "generation": 3,
            "creationTimestamp": "2025-01-02T03:04:05Z",
            "labels": {"app": name},
            "annotations": {"note": "keep me"},
            "finalizers": ["example.com/cleanup"],
            "managedFields": [
                {
                    "manager": "kubectl",
                    "operation": "Apply",
                    "apiVersion": V1,
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:spec": {}},
                }
            ],
        },
        "spec": {"engine": "postgres", **spec},
        "status": {"ready": True},
    }


async def convert(app: WebhookApp, objects: list[Any], desired: str) -> dict[str, Any]:
    body = conversion_review(objects, desired)
    answer = await asgi_call(app, "/convert", body)
    assert answer.status == 200
    out = answer.json()
    assert out["apiVersion"] == "apiextensions.k8s.io/v1" and out["kind"] == "ConversionReview"
    assert out["response"]["uid"] == body["request"]["uid"]
    response: dict[str, Any] = out["response"]
    return response


async def test_round_trip_is_lossless(app: WebhookApp) -> None:
    full = v1(
        "a",
        storageGi=20,
        replicas=3,
        backup={"schedule": "@daily", "keep": 7},
        tags=["x"],
        options={"a/b": "c"},
    )
    down = await convert(app, [full], V1ALPHA1)
    assert down["result"]["status"] == "Success"
    [old] = down["convertedObjects"]
    assert old["apiVersion"] == V1ALPHA1 and old["kind"] == "Database"
    assert old["spec"] == {"engine": "postgres", "size": "20Gi"}
    assert LOST in old["metadata"]["annotations"]
    # metadata other than labels/annotations is the received object's, verbatim
    for key in (
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "finalizers",
        "managedFields",
    ):
        assert old["metadata"][key] == full["metadata"][key]
    up = await convert(app, [old], V1)
    assert up["convertedObjects"] == [full]


async def test_lists_convert_in_order_both_ways(app: WebhookApp) -> None:
    objects = [v1(f"db{i}", storageGi=i + 1, replicas=i % 3) for i in range(5)]
    down = await convert(app, copy.deepcopy(objects), V1ALPHA1)
    assert [o["metadata"]["name"] for o in down["convertedObjects"]] == [f"db{i}" for i in range(5)]
    up = await convert(app, down["convertedObjects"], V1)
    assert up["convertedObjects"] == objects


async def test_objects_already_in_the_desired_version_are_unchanged(app: WebhookApp) -> None:
    obj = v1("same", unknown="kept as sent")
    out = await convert(app, [obj], V1)
    assert out["convertedObjects"] == [obj]


async def test_empty_request(app: WebhookApp) -> None:
    out = await convert(app, [], V1)
    assert out == {
        "uid": out["uid"],
        "convertedObjects": [],
        "result": {"metadata": {}, "status": "Success"},
    }


@pytest.mark.parametrize(
    ("bad", "desired", "words"),
    [
        (
            {
                "apiVersion": V1,
                "kind": "Database",
                "metadata": {"name": "x"},
                "spec": {"engine": 5},
            },
            V1ALPHA1,
            'objects[1]: Database.webhook.test.kubewerk.dev "x" is invalid: spec.engine',
        ),
        (
            {"apiVersion": f"{GROUP}/v9", "kind": "Database", "metadata": {"name": "x"}},
            V1,
            "objects[1]: no model is registered for webhook.test.kubewerk.dev/v9, Kind=Database",
        ),
        (
            {"apiVersion": "other.example.com/v1", "kind": "Database", "metadata": {"name": "x"}},
            V1,
            "objects[1]: cannot convert Database of group 'other.example.com'",
        ),
        ("not an object", V1, "objects[1] is not a JSON object"),
        ({"metadata": {}}, V1, "objects[1] has no apiVersion and kind"),
        (
            {
                "apiVersion": V1,
                "kind": "Database",
                "metadata": {"name": "x"},
                "spec": {"engine": "pg"},
            },
            f"{GROUP}/v7",
            "no model is registered for webhook.test.kubewerk.dev/v7",
        ),
    ],
)
async def test_failures_convert_nothing(
    app: WebhookApp, bad: Any, desired: str, words: str
) -> None:
    out = await convert(app, [v1("fine"), bad, v1("also-fine")], desired)
    assert "convertedObjects" not in out
    assert out["result"]["status"] == "Failure"
    assert words in out["result"]["message"], out["result"]["message"]


async def test_invalid_labels_from_a_converter_fail(app: WebhookApp) -> None:
    from kubewerk.model import converter

    from . import models

    original = models.down

    @converter
    def bad_down(src: Database) -> models.DatabaseV1alpha1:
        out = original(src)
        out.metadata.labels = {"bad key!": "v"}
        return out

    try:
        out = await convert(app, [v1("a")], V1ALPHA1)
    finally:
        converter(original)
    assert out["result"]["status"] == "Failure"
    assert out["result"]["message"].startswith(
        'objects[0]: invalid metadata: metadata.labels: Invalid value: "bad key!"'
    )


async def test_converter_bugs_are_failures_not_tracebacks(app: WebhookApp) -> None:
    from kubewerk.model import converter

    from . import models

    original = models.down

    @converter
    def broken(src: Database) -> models.DatabaseV1alpha1:
        raise ZeroDivisionError("oops")

    try:
        out = await convert(app, [v1("a")], V1ALPHA1)
    finally:
        converter(original)
    assert out["result"] == {
        "metadata": {},
        "status": "Failure",
        "message": f"internal error converting to {V1ALPHA1}: ZeroDivisionError: oops",
    }


async def test_kinds_limit() -> None:
    app = WebhookApp()
    app.conversion("/convert-other", kinds=[])
    answer = await asgi_call(app, "/convert-other", conversion_review([v1("a")], V1ALPHA1))
    assert (
        "this webhook does not convert Database.webhook.test.kubewerk.dev"
        in answer.json()["response"]["result"]["message"]
    )


@pytest.mark.parametrize(
    ("body", "words"),
    [
        (
            {"kind": "ConversionReview", "apiVersion": "apiextensions.k8s.io/v2", "request": {}},
            "expected a ConversionReview",
        ),
        (
            {"kind": "AdmissionReview", "apiVersion": "apiextensions.k8s.io/v1", "request": {}},
            "expected a ConversionReview",
        ),
        ({"kind": "ConversionReview", "apiVersion": "apiextensions.k8s.io/v1"}, "has no request"),
        (
            {
                "kind": "ConversionReview",
                "apiVersion": "apiextensions.k8s.io/v1",
                "request": {"desiredAPIVersion": V1},
            },
            "request.uid is missing",
        ),
        (
            {
                "kind": "ConversionReview",
                "apiVersion": "apiextensions.k8s.io/v1",
                "request": {"uid": "u"},
            },
            "request.desiredAPIVersion is missing",
        ),
        (
            {
                "kind": "ConversionReview",
                "apiVersion": "apiextensions.k8s.io/v1",
                "request": {"uid": "u", "desiredAPIVersion": V1, "objects": {}},
            },
            "request.objects must be a list",
        ),
    ],
)
async def test_malformed_conversion_reviews(
    app: WebhookApp, body: dict[str, Any], words: str
) -> None:
    answer = await asgi_call(app, "/convert", body)
    assert answer.status == 400 and words in answer.json()["message"]


async def test_v1beta1_conversion_review(app: WebhookApp) -> None:
    body = conversion_review([v1("a")], V1ALPHA1, api_version="apiextensions.k8s.io/v1beta1")
    out = (await asgi_call(app, "/convert", body)).json()
    assert out["apiVersion"] == "apiextensions.k8s.io/v1beta1"
    assert out["response"]["result"]["status"] == "Success"
