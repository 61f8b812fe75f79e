"""OpenAPI for the create-only kinds (the authentication and authorization reviews) as
kube-apiserver publishes them: only the collection path with its POST, the kind's
published (vendored) definition and what it references, and no list kind (kube has no
``TokenReviewList``; its installer publishes a list kind only for a storage that lists).

Checked against kube's api/openapi-spec/v3/apis__authentication.k8s.io__v1_openapi.json.
"""

from __future__ import annotations

from typing import Any

import pytest

from kubewerk.apiserver.app import ApiServer
from kubewerk.apiserver.kinds import k8s_openapi
from kubewerk.apiserver.server import EmbeddedServer
from tests.apiserver.helpers import json_call

AUTHN = "/apis/authentication.k8s.io/v1"
AUTHZ = "/apis/authorization.k8s.io/v1"
KUBE_AUTHN_SCHEMAS = {
    "io.k8s.api.authentication.v1.SelfSubjectReview",
    "io.k8s.api.authentication.v1.SelfSubjectReviewStatus",
    "io.k8s.api.authentication.v1.TokenReview",
    "io.k8s.api.authentication.v1.TokenReviewSpec",
    "io.k8s.api.authentication.v1.TokenReviewStatus",
    "io.k8s.api.authentication.v1.UserInfo",
    "io.k8s.apimachinery.pkg.apis.meta.v1.APIResource",
    "io.k8s.apimachinery.pkg.apis.meta.v1.APIResourceList",
    "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1",
    "io.k8s.apimachinery.pkg.apis.meta.v1.ManagedFieldsEntry",
    "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
    "io.k8s.apimachinery.pkg.apis.meta.v1.OwnerReference",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Time",
}
"""The components of kube-apiserver's authentication.k8s.io/v1 document."""
AUTHZ_KINDS = (
    "LocalSubjectAccessReview",
    "SelfSubjectAccessReview",
    "SelfSubjectRulesReview",
    "SubjectAccessReview",
)


@pytest.fixture
def app() -> ApiServer:
    """Every built-in kind, the reviews included; no socket."""
    return EmbeddedServer("memory").app


async def _get(app: ApiServer, path: str) -> Any:
    status, doc = await json_call(app, "GET", path)
    assert status == 200, doc
    return doc


def _methods(item: dict[str, Any]) -> list[str]:
    return sorted(k for k in item if k != "parameters")


async def test_v3_authentication_document_is_kube_apiservers(app: ApiServer) -> None:
    doc = await _get(app, "/openapi/v3" + AUTHN)
    assert {p: _methods(v) for p, v in doc["paths"].items()} == {
        AUTHN + "/": ["get"],
        AUTHN + "/selfsubjectreviews": ["post"],
        AUTHN + "/tokenreviews": ["post"],
    }
    assert set(doc["components"]["schemas"]) == KUBE_AUTHN_SCHEMAS


async def test_tokenreview_schema_is_the_published_one(app: ApiServer) -> None:
    """What ``kubectl explain tokenreview`` reads: spec and status with their fields."""
    assert k8s_openapi.definition_name("authentication.k8s.io", "v1", "TokenReview") == (
        "io.k8s.api.authentication.v1.TokenReview"
    )
    doc = await _get(app, "/openapi/v3" + AUTHN)
    schemas = doc["components"]["schemas"]
    review = schemas["io.k8s.api.authentication.v1.TokenReview"]
    assert review["required"] == ["spec"]
    spec_ref = review["properties"]["spec"]["allOf"][0]["$ref"]
    assert spec_ref == "#/components/schemas/io.k8s.api.authentication.v1.TokenReviewSpec"
    spec = schemas["io.k8s.api.authentication.v1.TokenReviewSpec"]
    assert set(spec["properties"]) == {"audiences", "token"}
    assert review["x-kubernetes-group-version-kind"] == [
        {"group": "authentication.k8s.io", "kind": "TokenReview", "version": "v1"}
    ]


async def test_v3_authorization_document_has_the_vendored_reviews_and_no_lists(
    app: ApiServer,
) -> None:
    doc = await _get(app, "/openapi/v3" + AUTHZ)
    assert {p: _methods(v) for p, v in doc["paths"].items()} == {
        AUTHZ + "/": ["get"],
        AUTHZ + "/namespaces/{namespace}/localsubjectaccessreviews": ["post"],
        AUTHZ + "/selfsubjectaccessreviews": ["post"],
        AUTHZ + "/selfsubjectrulesreviews": ["post"],
        AUTHZ + "/subjectaccessreviews": ["post"],
    }
    roots = [f"io.k8s.api.authorization.v1.{k}" for k in AUTHZ_KINDS]
    expected = set(
        k8s_openapi.closure(
            [
                *roots,
                "io.k8s.apimachinery.pkg.apis.meta.v1.APIResourceList",
                "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
            ]
        )
    )
    assert set(doc["components"]["schemas"]) == expected
    assert "io.k8s.api.authorization.v1.SubjectAccessReviewSpec" in expected


async def test_v2_has_no_list_kinds_for_the_reviews_and_their_published_schemas(
    app: ApiServer,
) -> None:
    doc = await _get(app, "/openapi/v2")
    definitions = doc["definitions"]
    reviews = [
        n
        for n in definitions
        if n.startswith(("io.k8s.api.authentication.v1.", "io.k8s.api.authorization.v1."))
    ]
    assert not [n for n in reviews if n.endswith("List")]
    token = definitions["io.k8s.api.authentication.v1.TokenReview"]
    assert token["properties"]["spec"]["$ref"] == (
        "#/definitions/io.k8s.api.authentication.v1.TokenReviewSpec"
    )
    assert "io.k8s.api.authorization.v1.SubjectAccessReviewSpec" in definitions
    paths = [p for p in doc["paths"] if p.startswith((AUTHN, AUTHZ))]
    assert not [p for p in paths if p.endswith("{name}")]
    assert AUTHN + "/tokenreviews" in paths
