"""The ``authorization.k8s.io/v1`` access reviews: ask the authorizer, answer, store nothing.

As kube-apiserver's ``pkg/registry/authorization/*`` REST handlers:

- ``SubjectAccessReview`` (cluster) and ``LocalSubjectAccessReview`` (namespaced): may
  ``spec.user``/``spec.groups``/``spec.uid``/``spec.extra`` do what
  ``spec.resourceAttributes`` or ``spec.nonResourceAttributes`` say;
- ``SelfSubjectAccessReview``: may the requesting user (``kubectl auth can-i``);
- ``SelfSubjectRulesReview``: every rule the requesting user holds in
  ``spec.namespace`` (``kubectl auth can-i --list``).

Each answer is the request's object with ``status`` filled (``allowed``, ``denied`` —
never: RBAC has no deny —, ``reason``, ``evaluationError``; or ``resourceRules``,
``nonResourceRules``, ``incomplete``, ``evaluationError``), 201 Created. Invalid specs
are 422 with kube's messages (``exactly one of nonResourceAttributes or
resourceAttributes must be specified``, ``at least one of user or group must be
specified``, a local review's namespace ``must match metadata.namespace``, metadata
``must be empty``). With authorization off the server's authorizer is ``AlwaysAllow``:
every review is allowed and the rules are ``*`` — what kube answers in that mode.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubewerk.apiserver.auth.authorizer import rules_review
from kubewerk.apiserver.auth.types import Attributes, Authorizer, UserInfo, request_user
from kubewerk.core.errors import ApiError, FieldError
from kubewerk.core.gofmt import GoText, go_json

JSON = dict[str, Any]

GROUP = "authorization.k8s.io"
KINDS = {
    "subjectaccessreviews": "SubjectAccessReview",
    "localsubjectaccessreviews": "LocalSubjectAccessReview",
    "selfsubjectaccessreviews": "SelfSubjectAccessReview",
    "selfsubjectrulesreviews": "SelfSubjectRulesReview",
}


def _dict(value: Any) -> JSON:
    return value if isinstance(value, dict) else {}


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _strings(value: Any) -> tuple[str, ...]:
    return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()


def _empty_meta(meta: JSON, keep: tuple[str, ...] = ()) -> bool:
    """Whether ObjectMeta is the zero value (managedFields and ``keep`` ignored)."""
    return all(
        value in (None, "", {}, [], 0)
        for key, value in meta.items()
        if key not in ("managedFields", *keep)
    )


def _go_value(value: Any) -> GoText:
    return GoText(go_json(value))


def _attributes(user: UserInfo, spec: JSON) -> Attributes:
    """kube's ``ResourceAttributesFrom`` / ``NonResourceAttributesFrom``."""
    resource = spec.get("resourceAttributes")
    if isinstance(resource, dict):
        return Attributes(
            user,
            _str(resource.get("verb")),
            namespace=_str(resource.get("namespace")),
            api_group=_str(resource.get("group")),
            api_version=_str(resource.get("version")),
            resource=_str(resource.get("resource")),
            subresource=_str(resource.get("subresource")),
            name=_str(resource.get("name")),
            resource_request=True,
        )
    non_resource = _dict(spec.get("nonResourceAttributes"))
    return Attributes(
        user,
        _str(non_resource.get("verb")),
        path=_str(non_resource.get("path")),
        resource_request=False,
    )


def _spec_errors(spec: JSON, self_review: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    resource = spec.get("resourceAttributes")
    non_resource = spec.get("nonResourceAttributes")
    if resource is not None and non_resource is not None:
        errs.append(
            FieldError.invalid(
                "spec.nonResourceAttributes",
                _go_value(non_resource),
                "cannot be specified in combination with resourceAttributes",
            )
        )
    if resource is None and non_resource is None:
        errs.append(
            FieldError.invalid(
                "spec.resourceAttributes",
                GoText("null"),
                "exactly one of nonResourceAttributes or resourceAttributes must be specified",
            )
        )
    if not self_review and not _str(spec.get("user")) and not _strings(spec.get("groups")):
        errs.append(
            FieldError.invalid(
                "spec.user",
                _str(spec.get("user")),
                "at least one of user or group must be specified",
            )
        )
    return errs


def _spec_user(spec: JSON) -> UserInfo:
    extra: Mapping[str, tuple[str, ...]] = {
        key: _strings(values) for key, values in _dict(spec.get("extra")).items()
    }
    return UserInfo(
        _str(spec.get("user")), _str(spec.get("uid")), _strings(spec.get("groups")), extra
    )


class Reviews:
    """Answers the four reviews with ``authorizer`` (the server's, ``AlwaysAllow`` when
    authorization is off)."""

    def __init__(self, authorizer: Authorizer) -> None:
        self.authorizer = authorizer

    def create(
        self, resource: str, namespace: str | None, body: JSON, user: UserInfo | None = None
    ) -> JSON:
        """The answered review for a POST of ``body`` to ``resource`` (in ``namespace``
        for the local review); ``user`` is the requester (default: ``request_user()``).
        Raises ``ApiError`` as kube-apiserver does for a bad request or spec."""
        kind = KINDS.get(resource)
        if kind is None:
            raise ApiError.not_found_path()
        expected = f"{GROUP}/v1"
        if _str(body.get("kind")) not in ("", kind) or _str(body.get("apiVersion")) not in (
            "",
            expected,
        ):
            raise ApiError.bad_request(
                f"the API version in the data ({_str(body.get('apiVersion'))}) does not match "
                f"the expected API version ({expected})"
                if _str(body.get("apiVersion")) not in ("", expected)
                else f"the kind in the data ({_str(body.get('kind'))}) does not match the "
                f"expected kind ({kind})"
            )
        review = dict(body)
        review["apiVersion"] = expected
        review["kind"] = kind
        meta = _dict(review.get("metadata"))
        spec = _dict(review.get("spec"))
        requester = user if user is not None else request_user()
        if resource == "localsubjectaccessreviews":
            if not namespace:
                raise ApiError.bad_request("namespace is required on this type: ")
            body_ns = _str(meta.get("namespace"))
            if body_ns and body_ns != namespace:
                raise ApiError.bad_request(
                    "the namespace of the provided object does not match the namespace sent "
                    "on the request"
                )
            meta = {**meta, "namespace": namespace}
            review["metadata"] = meta
        if resource == "selfsubjectrulesreviews":
            return self._rules(review, spec, requester)
        errs = _spec_errors(spec, self_review=resource == "selfsubjectaccessreviews")
        if resource == "localsubjectaccessreviews":
            if not _empty_meta(meta, ("namespace",)):
                errs.append(
                    FieldError.invalid(
                        "metadata", _go_value(meta), "must be empty except for namespace"
                    )
                )
            attrs = spec.get("resourceAttributes")
            if isinstance(attrs, dict) and _str(attrs.get("namespace")) != namespace:
                errs.append(
                    FieldError.invalid(
                        "spec.resourceAttributes.namespace",
                        _str(attrs.get("namespace")),
                        "must match metadata.namespace",
                    )
                )
            if spec.get("nonResourceAttributes") is not None:
                errs.append(
                    FieldError.invalid(
                        "spec.nonResourceAttributes",
                        _go_value(spec.get("nonResourceAttributes")),
                        "disallowed on this kind of request",
                    )
                )
        elif not _empty_meta(meta):
            errs.append(FieldError.invalid("metadata", _go_value(meta), "must be empty"))
        if errs:
            raise ApiError.invalid(kind, GROUP, "", errs)
        if resource == "selfsubjectaccessreviews":
            if requester is None:
                raise ApiError.bad_request("no user present on request")
            subject = requester
        else:
            subject = _spec_user(spec)
        decision = self.authorizer.authorize(_attributes(subject, spec))
        status: JSON = {"allowed": decision.allowed}
        if decision.reason:
            status["reason"] = decision.reason
        review["status"] = status
        return review

    def _rules(self, review: JSON, spec: JSON, requester: UserInfo | None) -> JSON:
        if requester is None:
            raise ApiError.bad_request("no user present on request")
        namespace = _str(spec.get("namespace"))
        if not namespace:
            raise ApiError.bad_request("no namespace on request")
        resource_rules, non_resource_rules, incomplete, error = rules_review(
            self.authorizer, requester, namespace
        )
        status: JSON = {
            "resourceRules": resource_rules,
            "nonResourceRules": non_resource_rules,
            "incomplete": incomplete,
        }
        if error:
            status["evaluationError"] = error
        review["status"] = status
        return review
