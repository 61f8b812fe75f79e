"""The security filters every request passes, in kube-apiserver's order: authentication,
impersonation, authorization.

``RequestGuard.check(scope)`` answers the request's ``UserInfo`` (the impersonated one
when impersonation was asked for and allowed) or raises ``ApiError``:

- 401 ``Unauthorized`` (kube's body: message ``Unauthorized``, no details, no
  ``WWW-Authenticate`` header) when authentication fails;
- 403 ``Forbidden`` worded as kube's ``responsewriters.Forbidden``:
  ``<resource>[.<group>] ["<name>"] is forbidden: User "<user>" cannot <verb> resource
  "<resource>[/<sub>]" in API group "<group>" in the namespace "<ns>"`` (or ``at the
  cluster scope``), ``forbidden: User "<user>" cannot <verb> path "<path>"`` for a
  non-resource request, with ``: <reason>`` appended when the authorizer gave one
  (``&``, ``<``, ``>`` HTML-escaped as kube's sanitizer does);
- 500 for impersonation headers kube refuses before authorizing.

Without an authenticator every request is ``system:unsecured`` in ``system:masters`` (as
kube-apiserver's insecure port served it); with the ``AlwaysAllow`` authorizer the
authorization step is skipped (it would allow), so a server with security off pays only
a scan of the header names.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kubewerk.apiserver.auth import impersonation
from kubewerk.apiserver.auth.authn import Authenticator, header, peer_certificate
from kubewerk.apiserver.auth.requestinfo import RequestInfo, request_info
from kubewerk.apiserver.auth.types import UNSECURED, AlwaysAllow, Attributes, Authorizer, UserInfo
from kubewerk.core.errors import ApiError
from kubewerk.core.gvk import qualified

REQUESTER_KEY = "kubewerk.requester"
"""The ASGI scope key holding the authenticated user of an impersonating request."""
_SANITIZE = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})
_INFO_CACHE_LIMIT = 1024


def unauthorized() -> ApiError:
    """kube-apiserver's 401 for a request no authenticator accepted."""
    return ApiError(401, "Unauthorized", "Unauthorized")


def forbidden_message(attrs: Attributes) -> str:
    """kube's ``forbiddenMessage`` for ``attrs`` (without the reason)."""
    user = attrs.user.name
    if not attrs.resource_request:
        return f'User "{_go(user)}" cannot {attrs.verb} path "{_go(attrs.path)}"'
    resource = attrs.resource + (f"/{attrs.subresource}" if attrs.subresource else "")
    where = (
        f'in the namespace "{_go(attrs.namespace)}"' if attrs.namespace else "at the cluster scope"
    )
    return (
        f'User "{_go(user)}" cannot {attrs.verb} resource "{_go(resource)}" in API group '
        f'"{_go(attrs.api_group)}" {where}'
    )


def forbidden(attrs: Attributes, reason: str) -> ApiError:
    """kube-apiserver's 403 Status for a request the authorizer did not allow."""
    text = forbidden_message(attrs).translate(_SANITIZE)
    if reason:
        text = f"{text}: {reason}"
    if not attrs.resource and not attrs.api_group:
        return ApiError(403, "Forbidden", f"forbidden: {text}", {})
    subject = qualified(attrs.resource, attrs.api_group)
    message = (
        f'{subject} "{attrs.name}" is forbidden: {text}'
        if attrs.name
        else f"{subject} is forbidden: {text}"
    )
    details: dict[str, Any] = {}
    if attrs.name:
        details["name"] = attrs.name
    if attrs.api_group:
        details["group"] = attrs.api_group
    if attrs.resource:
        details["kind"] = attrs.resource
    return ApiError(403, "Forbidden", message, details)


def _go(text: str) -> str:
    """The inside of Go's ``%q`` for printable text (backslash and quote escaped)."""
    return text.replace("\\", "\\\\").replace('"', '\\"')


class RequestGuard:
    """Authentication, impersonation and authorization for one server (module doc).

    ``authenticator`` None: authentication off (every request ``system:unsecured``);
    ``authorizer`` None: ``AlwaysAllow``."""

    def __init__(
        self, authenticator: Authenticator | None = None, authorizer: Authorizer | None = None
    ) -> None:
        self.authenticator = authenticator
        self.authorizer: Authorizer = authorizer if authorizer is not None else AlwaysAllow()
        self.authorizing = not isinstance(self.authorizer, AlwaysAllow)
        self.trivial = authenticator is None and not self.authorizing
        """Nothing to check but impersonation headers (everything is allowed)."""
        self._infos: dict[tuple[str, str, bytes], RequestInfo] = {}

    def check(self, scope: dict[str, Any]) -> UserInfo:
        """The user to serve ``scope`` as; ``ApiError`` 401/403/500 otherwise. For an
        impersonating request the authenticated user is left in
        ``scope["kubewerk.requester"]`` (for the audit log)."""
        headers: Sequence[tuple[bytes, bytes]] = scope["headers"]
        authenticator = self.authenticator
        if authenticator is None:
            user = UNSECURED
        else:
            found = authenticator.authenticate(
                header(headers, b"authorization"), peer_certificate(scope)
            )
            if found is None:
                raise unauthorized()
            user = found
        if impersonation.asks_to_impersonate(headers):
            # the authenticated user, before impersonation (what kube's audit records as user)
            scope[REQUESTER_KEY] = user
            user = self._impersonate(user, headers)
        if self.authorizing:
            info = self.info(scope)
            attrs = Attributes.from_request_info(info, user)
            decision = self.authorizer.authorize(attrs)
            if not decision.allowed:
                raise forbidden(attrs, decision.reason)
        return user

    def check_create_on_update(self, attrs: Attributes) -> None:
        """kube's ``withAuthorization`` for a PUT that creates its object (k8s.io/apiserver
        pkg/endpoints/handlers/update.go): besides ``update``, which the request was
        authorized for, the user must be allowed ``create`` (``attrs``, verb ``create``).
        A refusal is 403 ``NewForbidden(resource, name, reason)``: ``<resource>.<group>
        "<name>" is forbidden: <the authorizer's reason>``, not the request filter's
        ``User ... cannot`` text. Nothing is checked when everything is allowed."""
        if not self.authorizing:
            return
        decision = self.authorizer.authorize(attrs)
        if decision.allowed:
            return
        subject = qualified(attrs.resource, attrs.api_group)
        details: dict[str, Any] = {"name": attrs.name, "kind": attrs.resource}
        if attrs.api_group:
            details["group"] = attrs.api_group
        raise ApiError(
            403,
            "Forbidden",
            f'{subject} "{attrs.name}" is forbidden: {decision.reason}',
            details,
        )

    def info(self, scope: dict[str, Any]) -> RequestInfo:
        """The request's ``RequestInfo`` (cached per method, path and query)."""
        raw_query: bytes = scope.get("query_string", b"")
        key = (scope["method"], scope["path"], raw_query)
        info = self._infos.get(key)
        if info is None:
            from kubewerk.apiserver.querystring import parse_query

            # the parameters the handlers serve (the first of a repeated one, as kube)
            info = request_info(scope["method"], scope["path"], parse_query(raw_query))
            if len(self._infos) >= _INFO_CACHE_LIMIT:
                self._infos.clear()
            self._infos[key] = info
        return info

    def _impersonate(self, requester: UserInfo, headers: Sequence[tuple[bytes, bytes]]) -> UserInfo:
        try:
            asked, user = impersonation.wanted(headers)
        except impersonation.ImpersonationError as exc:
            raise ApiError.internal(str(exc)) from None
        if user is None:
            return requester
        if self.authorizing:
            for want in asked:
                attrs = impersonation.attributes(requester, want)
                decision = self.authorizer.authorize(attrs)
                if not decision.allowed:
                    raise forbidden(attrs, decision.reason)
        return user
