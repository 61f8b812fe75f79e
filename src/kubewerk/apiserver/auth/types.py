"""The interfaces authentication and authorization share.

``UserInfo`` is who a request is (kube's ``user.Info``), ``Attributes`` what it asks to do
(kube's ``authorizer.AttributesRecord``), ``Decision`` an authorizer's answer and
``Authorizer`` the protocol an authorizer implements. ``AlwaysAllow`` is the authorizer
answering when authorization is off: it allows everything and lists the wildcard rules
kube's ``AlwaysAllow`` authorizer lists.

The user of the request being served travels with it: the server sets it for the
request's whole handling (``Request.user`` in ``apiserver.app``, and the context variable
read by ``request_user()`` for code that only sees a ``Target`` and a body: the REST
layer, admission, the audit log). Outside a request ``request_user()`` is None.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

if TYPE_CHECKING:
    from kubewerk.apiserver.auth.requestinfo import RequestInfo

JSON = dict[str, Any]

# Well-known user names and groups (k8s.io/apiserver/pkg/authentication/user).
ANONYMOUS_USER = "system:anonymous"
ALL_AUTHENTICATED = "system:authenticated"
ALL_UNAUTHENTICATED = "system:unauthenticated"
SYSTEM_MASTERS = "system:masters"
SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"
SERVICE_ACCOUNTS_GROUP = "system:serviceaccounts"


@dataclass(frozen=True, slots=True)
class UserInfo:
    """Who a request is: the user name, uid, groups and extra attributes kube's
    ``user.Info`` carries. Immutable; hashable on name, uid and groups (``extra``
    takes part in equality only)."""

    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict, hash=False)

    def to_json(self) -> JSON:
        """The ``authentication.k8s.io/v1`` ``UserInfo`` form (empty fields omitted)."""
        out: JSON = {"username": self.name}
        if self.uid:
            out["uid"] = self.uid
        if self.groups:
            out["groups"] = list(self.groups)
        if self.extra:
            out["extra"] = {key: list(values) for key, values in self.extra.items()}
        return out


@dataclass(frozen=True, slots=True)
class Attributes:
    """What a request asks to do, as kube's ``authorizer.AttributesRecord``.

    For a resource request (``resource_request``) ``verb`` is one of kube's API verbs
    (get, list, watch, create, update, patch, delete, deletecollection, or a special verb
    such as ``impersonate``) and ``namespace``/``api_group``/``api_version``/``resource``/
    ``subresource``/``name`` address the object; for a non-resource request ``verb`` is the
    lower-case HTTP method (get, post, put, patch, delete, head, options) and ``path`` the
    URL path."""

    user: UserInfo
    verb: str
    namespace: str = ""
    api_group: str = ""
    api_version: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    path: str = ""
    resource_request: bool = True

    @classmethod
    def from_request_info(cls, info: RequestInfo, user: UserInfo) -> Attributes:
        """What ``user`` asks to do with the request ``info`` describes: every field of
        ``info`` (verb, namespace, group, version, resource, subresource, name, path and
        whether it is a resource request) carried over unchanged, as kube's
        ``GetAuthorizerAttributes`` does."""
        return cls(
            user,
            info.verb,
            info.namespace,
            info.api_group,
            info.api_version,
            info.resource,
            info.subresource,
            info.name,
            info.path,
            info.resource_request,
        )


class Decision(NamedTuple):
    """An authorizer's answer. ``allowed`` False with an empty ``reason`` is kube's
    NoOpinion (denied when no other authorizer allows); ``reason`` is appended to the 403
    message as kube does."""

    allowed: bool
    reason: str = ""


class Authorizer(Protocol):
    """Decides requests and lists a user's rules (for SelfSubjectRulesReview)."""

    def authorize(self, attrs: Attributes) -> Decision:
        """Whether ``attrs`` is allowed; must not raise for any well-formed Attributes."""
        ...

    def rules_for(self, user: UserInfo, namespace: str) -> tuple[list[JSON], list[JSON], bool]:
        """``(resourceRules, nonResourceRules, incomplete)`` as SelfSubjectRulesReview's
        ``status`` lists them for ``user`` in ``namespace``."""
        ...


class AlwaysAllow:
    """The authorizer when authorization is off: every request allowed, and the rules
    kube's AlwaysAllow authorizer reports (every verb on every resource and URL)."""

    def authorize(self, attrs: Attributes) -> Decision:
        """Always allowed, with no reason."""
        return Decision(True)

    def rules_for(self, user: UserInfo, namespace: str) -> tuple[list[JSON], list[JSON], bool]:
        """One wildcard resource rule and one wildcard non-resource rule, complete."""
        return (
            [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
            [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
            False,
        )


ANONYMOUS = UserInfo(ANONYMOUS_USER, groups=(ALL_UNAUTHENTICATED,))
"""The user of a request without credentials when anonymous requests are allowed."""

UNSECURED = UserInfo("system:unsecured", groups=(SYSTEM_MASTERS, ALL_AUTHENTICATED))
"""The user of every request when authentication is off: kube-apiserver's insecure port
(no authentication, no authorization; removed in 1.20) served every request as this
superuser, which is what a server with security off is."""

CURRENT_USER: ContextVar[UserInfo | None] = ContextVar("kubewerk_request_user", default=None)
"""The user of the request being served (set by the server around each request)."""


def request_user() -> UserInfo | None:
    """The authenticated (or impersonated) user of the request being served; None when
    no request is being served (a controller's own write, a test calling the REST layer)."""
    return CURRENT_USER.get()
