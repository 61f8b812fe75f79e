"""What a request addresses, for the audit event's ``verb`` and ``objectRef``.

kube-apiserver's audit filter reads the request's ``RequestInfo`` (its
``RequestInfoFactory``): ``/api/v1/...`` and ``/apis/GROUP/VERSION/...`` with at least a
resource are resource requests (``namespaces/NS/RESOURCE[/NAME[/SUBRESOURCE]]``; the
Namespace ``NS`` itself, with its ``status``/``finalize`` subresources, has namespace
``NS``); verbs GET/HEAD ``get`` (``list``, or ``watch`` with ``watch=true|1``, without a
name), POST ``create``, PUT ``update``, PATCH ``patch``, DELETE ``delete``
(``deletecollection`` without a name). Everything else is a non-resource request whose
verb is the lower-case HTTP method. ``RequestRef`` is what the audit log needs of that.
"""

from __future__ import annotations

from typing import Final, NamedTuple

__all__ = ["RequestRef", "request_ref"]

_VERBS: Final = {
    "GET": "get",
    "HEAD": "get",
    "POST": "create",
    "PUT": "update",
    "PATCH": "patch",
    "DELETE": "delete",
}
_NAMESPACE_SUBRESOURCES: Final = frozenset({"status", "finalize"})


class RequestRef(NamedTuple):
    """The verb and the object a request addresses (kube's ``RequestInfo`` fields)."""

    resource_request: bool
    verb: str
    path: str
    api_group: str = ""
    api_version: str = ""
    namespace: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""


def request_ref(method: str, path: str, query: dict[str, str]) -> RequestRef:
    """The ``RequestRef`` of a request; never raises."""
    plain = RequestRef(False, method.lower(), path)
    parts = [p for p in path.strip("/").split("/")] if path.strip("/") else []
    if len(parts) >= 3 and parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    elif len(parts) >= 4 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return plain
    verb = _VERBS.get(method.upper(), method.lower())
    namespace = ""
    if rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in _NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
    resource = rest[0]
    name = rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 else ""
    if not name and verb == "get":
        verb = "watch" if query.get("watch", "").lower() in ("true", "1") else "list"
    elif not name and verb == "delete":
        verb = "deletecollection"
    return RequestRef(True, verb, path, group, version, namespace, resource, subresource, name)
