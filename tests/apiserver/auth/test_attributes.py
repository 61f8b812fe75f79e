"""``Attributes.from_request_info``: the authorizer's attributes for a request are its
``RequestInfo`` field for field, with the user beside them (the one constructor the
request guard and the audit policy both use)."""

from __future__ import annotations

from kubewerk.apiserver.auth.requestinfo import RequestInfo, request_info
from kubewerk.apiserver.auth.types import Attributes, UserInfo

_USER = UserInfo("jane", uid="u-1", groups=("dev",))


def test_every_field_carried_over_to_its_own_attribute() -> None:
    # every field distinct, so a value landing in the wrong attribute shows
    info = RequestInfo(
        resource_request=True,
        verb="patch",
        path="/apis/apps/v1/namespaces/ns/deployments/web/scale",
        api_group="apps",
        api_version="v1",
        namespace="ns",
        resource="deployments",
        subresource="scale",
        name="web",
    )
    assert Attributes.from_request_info(info, _USER) == Attributes(
        user=_USER,
        verb="patch",
        namespace="ns",
        api_group="apps",
        api_version="v1",
        resource="deployments",
        subresource="scale",
        name="web",
        path="/apis/apps/v1/namespaces/ns/deployments/web/scale",
        resource_request=True,
    )


def test_non_resource_request() -> None:
    attrs = Attributes.from_request_info(request_info("GET", "/healthz", {}), _USER)
    assert attrs == Attributes(_USER, "get", path="/healthz", resource_request=False)


def test_request_read_from_a_url() -> None:
    info = request_info("GET", "/api/v1/namespaces/a/pods", {"watch": "true"})
    attrs = Attributes.from_request_info(info, _USER)
    assert attrs.user is _USER
    assert (attrs.verb, attrs.namespace, attrs.api_group, attrs.api_version) == (
        "watch",
        "a",
        "",
        "v1",
    )
    assert (attrs.resource, attrs.subresource, attrs.name, attrs.resource_request) == (
        "pods",
        "",
        "",
        True,
    )
    assert attrs.path == "/api/v1/namespaces/a/pods"
