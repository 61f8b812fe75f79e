"""What a request asks to do, in the authorizer's terms: kube's ``RequestInfoFactory``.

``request_info`` reads a method, path and query the way kube-apiserver's
``k8s.io/apiserver/pkg/endpoints/request.RequestInfoFactory`` does:

- ``/api/v1/...`` and ``/apis/GROUP/VERSION/...`` with at least a resource are resource
  requests; everything else (``/version``, ``/healthz``, discovery roots, ``/openapi/v3``)
  is a non-resource request whose verb is the lower-case HTTP method;
- ``namespaces/NS/RESOURCE[/NAME[/SUB]]`` sets the namespace; ``namespaces/NS`` (and its
  ``status``/``finalize`` subresources) addresses the Namespace ``NS`` with namespace
  ``NS`` as kube sets it;
- verbs: GET/HEAD ``get`` (``list``, or ``watch`` with ``watch=true|1``, when there is no
  name; a ``fieldSelector`` of ``metadata.name=X`` then names ``X``), POST ``create``, PUT
  ``update``, PATCH ``patch``, DELETE ``delete`` (``deletecollection`` without a name).
"""

from __future__ import annotations

from typing import NamedTuple

from kubewerk.apiserver.querystring import query_flag

_NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})
_RESOURCE_VERBS = {
    "GET": "get",
    "HEAD": "get",
    "POST": "create",
    "PUT": "update",
    "PATCH": "patch",
    "DELETE": "delete",
}


class RequestInfo(NamedTuple):
    """The authorizer-relevant parts of one request (kube's ``RequestInfo``)."""

    resource_request: bool
    verb: str
    path: str
    api_group: str = ""
    api_version: str = ""
    namespace: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""


def request_info(method: str, path: str, query: dict[str, str]) -> RequestInfo:
    """``RequestInfo`` for a request; never raises (a malformed path is a non-resource
    request, as kube reads it)."""
    non_resource = RequestInfo(False, method.lower(), path)
    parts = path.strip("/").split("/") if path.strip("/") else []
    if not parts:
        return non_resource
    if parts[0] == "api":
        if len(parts) < 3:
            return non_resource
        group, version, rest = "", parts[1], parts[2:]
    elif parts[0] == "apis":
        if len(parts) < 4:
            return non_resource
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return non_resource
    verb = _RESOURCE_VERBS.get(method.upper())
    if verb is None:
        verb = method.lower()
    namespace = ""
    if rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in _NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
    resource = rest[0]
    name = rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 else ""
    if not name and verb == "get":
        verb = "watch" if query_flag(query, "watch") else "list"
        selector = query.get("fieldSelector", "")
        if selector:
            name = _exact_name(selector)
    elif not name and verb == "delete":
        verb = "deletecollection"
    return RequestInfo(True, verb, path, group, version, namespace, resource, subresource, name)


def _exact_name(selector: str) -> str:
    """The name a field selector requires exactly (``metadata.name=X`` or ``==``), if it
    is a valid path segment; else ""."""
    for term in selector.split(","):
        field, op, value = _split_term(term.strip())
        valid = value not in ("", ".", "..") and "/" not in value and "%" not in value
        if field == "metadata.name" and op in ("=", "==") and valid:
            return value
    return ""


def _split_term(term: str) -> tuple[str, str, str]:
    for op in ("!=", "==", "="):
        field, sep, value = term.partition(op)
        if sep:
            return field.strip(), op, value.strip()
    return term, "", ""
