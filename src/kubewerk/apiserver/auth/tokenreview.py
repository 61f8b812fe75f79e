"""``TokenReview`` (``authentication.k8s.io/v1``): who a bearer token is, as kube-apiserver's
``pkg/registry/authentication/tokenreview`` answers it. Delegated authenticators ask it
(kube-rbac-proxy, metrics servers, webhooks checking their callers), and so does kr8s's
``whoami`` when its kubeconfig holds a token.

A create answers 201 with the object sent and ``status`` filled; nothing is stored:

- ``spec.token`` empty: 400 ``token is required for TokenReview in authentication``;
- the token is checked for ``spec.audiences``, or the server's API audiences when none
  are given, by the server's token authenticators (``auth.authn.Authenticator
  .review_token``): ``status.authenticated`` (omitted when false, as kube's
  ``omitempty`` drops it), ``status.user`` (username, uid, groups with
  ``system:authenticated``, extra; ``{}`` when not authenticated), ``status.audiences``
  (those the token was accepted for) and ``status.error`` (``invalid bearer token``, or a
  ServiceAccount token's audience mismatch in kube's words);
- with authentication off the review comes back as sent: kube returns it unanswered when
  it has no token authenticator.

Who may ask is RBAC's ``create`` on ``tokenreviews`` (``system:auth-delegator`` has it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from kubewerk.apiserver.auth.selfsubject import check_kind
from kubewerk.apiserver.registry import ServedResource
from kubewerk.apiserver.request import RestResponse, Target
from kubewerk.core.errors import ApiError

if TYPE_CHECKING:
    from kubewerk.apiserver.app import ApiServer, CreateHandler
    from kubewerk.apiserver.auth.authn import Authenticator
    from kubewerk.apiserver.auth.types import UserInfo

JSON = dict[str, Any]
GROUP = "authentication.k8s.io"


def resource_type() -> ServedResource:
    """The served type: cluster-scoped, create only."""
    return ServedResource(
        group=GROUP,
        resource="tokenreviews",
        kind="TokenReview",
        list_kind="TokenReviewList",
        singular="tokenreview",
        namespaced=False,
        versions=["v1"],
        storage_version="v1",
        verbs=("create",),
        vendored_openapi=True,
    )


def _strings(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def token_review(
    authenticator: Authenticator | None, api_audiences: Sequence[str]
) -> CreateHandler:
    """The create handler of ``tokenreviews`` for a server authenticating with
    ``authenticator`` (None: authentication off) and accepting ``api_audiences``."""

    def review(target: Target, body: JSON, user: UserInfo, query: dict[str, str]) -> RestResponse:
        check_kind(body, target)
        answer = dict(body)
        answer["apiVersion"] = target.api_version
        answer["kind"] = target.rtype.kind
        spec = answer.get("spec")
        token = spec.get("token") if isinstance(spec, dict) else None
        if not isinstance(token, str) or not token:
            raise ApiError.bad_request("token is required for TokenReview in authentication")
        if authenticator is None:
            return RestResponse(201, answer)
        assert isinstance(spec, dict)
        audiences = _strings(spec.get("audiences")) or list(api_audiences)
        result = authenticator.review_token(token, audiences, api_audiences)
        status: JSON = {}
        if result.user is not None:
            status["authenticated"] = True
            status["user"] = result.user.to_json()
            if result.audiences:
                status["audiences"] = list(result.audiences)
        else:
            status["user"] = {}
        if result.error:
            status["error"] = result.error
        answer["status"] = status
        return RestResponse(201, answer)

    return review


def install_token_review(server: ApiServer) -> None:
    """Serve TokenReview on ``server``."""
    server.serve_create(
        resource_type(),
        token_review(server.guard.authenticator, server.service_accounts.audiences),
    )
