"""``RequestInfo`` as kube's RequestInfoFactory reads requests, and the impersonation
headers as kube's filter reads them."""

from __future__ import annotations

import pytest

from kubewerk.apiserver.auth import impersonation
from kubewerk.apiserver.auth.requestinfo import RequestInfo, request_info
from kubewerk.apiserver.auth.tokens import StaticTokens, TokenFileError


@pytest.mark.parametrize(
    ("method", "path", "query", "expected"),
    [
        ("GET", "/api/v1/namespaces/a/pods", {}, ("list", "", "v1", "a", "pods", "", "")),
        (
            "GET",
            "/api/v1/namespaces/a/pods",
            {"watch": "1"},
            ("watch", "", "v1", "a", "pods", "", ""),
        ),
        (
            "GET",
            "/api/v1/namespaces/a/pods",
            {"watch": "true", "fieldSelector": "metadata.name=web"},
            ("watch", "", "v1", "a", "pods", "", "web"),
        ),
        ("GET", "/api/v1/namespaces/a/pods/web", {}, ("get", "", "v1", "a", "pods", "", "web")),
        ("HEAD", "/api/v1/nodes/n1", {}, ("get", "", "v1", "", "nodes", "", "n1")),
        (
            "PATCH",
            "/apis/apps/v1/namespaces/a/deployments/web/scale",
            {},
            ("patch", "apps", "v1", "a", "deployments", "scale", "web"),
        ),
        ("POST", "/api/v1/namespaces", {}, ("create", "", "v1", "", "namespaces", "", "")),
        # a Namespace is addressed in its own namespace, as kube sets it
        ("PUT", "/api/v1/namespaces/a", {}, ("update", "", "v1", "a", "namespaces", "", "a")),
        (
            "PUT",
            "/api/v1/namespaces/a/finalize",
            {},
            ("update", "", "v1", "a", "namespaces", "finalize", "a"),
        ),
        (
            "DELETE",
            "/apis/x.io/v1/namespaces/a/dbs",
            {},
            ("deletecollection", "x.io", "v1", "a", "dbs", "", ""),
        ),
        ("DELETE", "/apis/x.io/v1/dbs/d", {}, ("delete", "x.io", "v1", "", "dbs", "", "d")),
    ],
)
def test_resource_requests(
    method: str, path: str, query: dict[str, str], expected: tuple[str, ...]
) -> None:
    info = request_info(method, path, query)
    assert info.resource_request
    assert (
        info.verb,
        info.api_group,
        info.api_version,
        info.namespace,
        info.resource,
        info.subresource,
        info.name,
    ) == expected


@pytest.mark.parametrize(
    "path", ["/", "/api", "/api/v1", "/apis", "/apis/apps", "/apis/apps/v1", "/version", "/x/y/z"]
)
def test_non_resource_requests(path: str) -> None:
    assert request_info("GET", path, {}) == RequestInfo(False, "get", path)
    assert request_info("POST", path, {}).verb == "post"


def test_impersonation_headers() -> None:
    asked, user = impersonation.wanted(
        [
            (b"impersonate-user", b"system:serviceaccount:ns:robot"),
            (b"impersonate-group", b"g1"),
            (b"impersonate-extra-scopes%2Fa", b"v1"),
            (b"impersonate-extra-scopes%2Fa", b"v2"),
            (b"impersonate-uid", b"1234"),
        ]
    )
    assert user is not None
    assert user.name == "system:serviceaccount:ns:robot" and user.uid == "1234"
    assert user.groups == (
        "g1",
        "system:serviceaccounts",
        "system:serviceaccounts:ns",
        "system:authenticated",
    )
    assert dict(user.extra) == {"scopes/a": ("v1", "v2")}
    assert [(w.resource, w.name, w.namespace, w.subresource) for w in asked] == [
        ("serviceaccounts", "robot", "ns", ""),
        ("groups", "g1", "", ""),
        ("userextras", "v1", "", "scopes/a"),
        ("userextras", "v2", "", "scopes/a"),
        ("uids", "1234", "", ""),
    ]
    _, anonymous = impersonation.wanted([(b"impersonate-user", b"system:anonymous")])
    assert anonymous is not None and anonymous.groups == ("system:unauthenticated",)
    _, explicit = impersonation.wanted(
        [(b"impersonate-user", b"u"), (b"impersonate-group", b"system:unauthenticated")]
    )
    assert explicit is not None and explicit.groups == ("system:unauthenticated",)
    with pytest.raises(impersonation.ImpersonationError, match="without impersonating a user"):
        impersonation.wanted([(b"impersonate-group", b"g")])
    assert impersonation.wanted([(b"authorization", b"x")]) == ([], None)


def test_token_file_format() -> None:
    tokens = StaticTokens.parse('a,alice,1,"x,y"\n,empty,2\nb, bob ,3,,extra\na2,al,4\n')
    assert tokens.users["a"].groups == ("x", "y")
    assert "" not in tokens.users
    assert tokens.users["b"].name == "bob "
    with pytest.raises(TokenFileError, match="must have at least 3 columns"):
        StaticTokens.parse("tok,user\n")
