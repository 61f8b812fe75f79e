"""``SelfSubjectReview`` (``authentication.k8s.io/v1``, ``kubectl auth whoami``): the
request's own user, answered for every server, whether authentication is on or off.

A create returns 201 with ``status.userInfo`` (username, uid, groups, extra) of the user
the request is served as (after impersonation) and ``metadata.creationTimestamp`` set
to now, as kube-apiserver's registry does; nothing is stored. Without authentication the
user is ``system:unsecured`` in ``system:masters`` (kube-apiserver's insecure port).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kubewerk.apiserver.auth.protobody import decoder
from kubewerk.apiserver.registry import ServedResource
from kubewerk.apiserver.request import RestResponse, Target
from kubewerk.core.errors import ApiError
from kubewerk.core.meta import now_rfc3339

if TYPE_CHECKING:
    from kubewerk.apiserver.app import ApiServer
    from kubewerk.apiserver.auth.types import UserInfo

JSON = dict[str, Any]
GROUP = "authentication.k8s.io"


def resource_type() -> ServedResource:
    """The served type: cluster-scoped, create only."""
    return ServedResource(
        group=GROUP,
        resource="selfsubjectreviews",
        kind="SelfSubjectReview",
        list_kind="SelfSubjectReviewList",
        singular="selfsubjectreview",
        namespaced=False,
        versions=["v1"],
        storage_version="v1",
        verbs=("create",),
        vendored_openapi=True,
    )


def check_kind(body: JSON, target: Target) -> None:
    """400 as kube's decoder for a body of another kind or group version (an absent
    ``apiVersion``/``kind`` is read as the target's)."""
    kind, api_version = body.get("kind"), body.get("apiVersion")
    expected = target.rtype.kind
    if (kind not in (None, "", expected)) or (api_version not in (None, "", target.api_version)):
        raise ApiError.bad_request(
            f"the API version in the data ({api_version}) does not match the expected API "
            f"version ({target.api_version})"
            if kind in (None, "", expected)
            else f"Object '{expected}' is invalid: kind: {kind} does not match the expected "
            f"kind {expected}"
        )


def review(target: Target, body: JSON, user: UserInfo, query: dict[str, str]) -> RestResponse:
    """The answer to a SelfSubjectReview create (see the module doc)."""
    check_kind(body, target)
    info: JSON = {"username": user.name}
    if user.uid:
        info["uid"] = user.uid
    if user.groups:
        info["groups"] = list(user.groups)
    if user.extra:
        info["extra"] = {key: list(values) for key, values in user.extra.items()}
    return RestResponse(
        201,
        {
            "kind": "SelfSubjectReview",
            "apiVersion": target.api_version,
            "metadata": {"creationTimestamp": now_rfc3339()},
            "status": {"userInfo": info},
        },
    )


def install_self_subject_review(server: ApiServer) -> None:
    """Serve SelfSubjectReview on ``server``."""
    server.serve_create(resource_type(), review, protobuf_decoder=decoder("SelfSubjectReview"))
