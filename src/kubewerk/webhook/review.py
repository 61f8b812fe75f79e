"""``admission.k8s.io`` AdmissionReview requests and responses, as kube-apiserver sends
and expects them.

kube-apiserver posts ``{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
"request": {...}}`` (or ``v1beta1``, the same shape, when a configuration lists only it)
and accepts an answer only when it is an AdmissionReview of the *same* apiVersion whose
``response.uid`` equals the request's uid; a validating webhook may not return a patch,
and a patch needs ``patchType: JSONPatch``. :func:`parse_admission_review` checks the
envelope (raising :class:`ReviewError` with a message saying what is wrong) and
:func:`admission_response` writes answers that pass those checks.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from kubewerk.core.gvk import GroupVersionKind, GroupVersionResource
from kubewerk.webhook.results import Allowed, Denied

__all__ = [
    "ADMISSION_VERSIONS",
    "AdmissionRequest",
    "Operation",
    "ReviewError",
    "UserInfo",
    "admission_response",
    "parse_admission_review",
]

ADMISSION_GROUP: Final = "admission.k8s.io"
ADMISSION_VERSIONS: Final = ("admission.k8s.io/v1", "admission.k8s.io/v1beta1")

Operation = Literal["CREATE", "UPDATE", "DELETE", "CONNECT"]
_OPERATIONS: Final = frozenset({"CREATE", "UPDATE", "DELETE", "CONNECT"})


class ReviewError(ValueError):
    """A review whose envelope kube-apiserver would never send; ``str()`` says why."""


@dataclass(frozen=True, slots=True)
class UserInfo:
    """``authentication.k8s.io/v1`` UserInfo of the requesting user."""

    username: str = ""
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class AdmissionRequest:
    """One ``AdmissionRequest``, with Python names.

    ``kind``/``resource``/``sub_resource`` describe the object as sent (converted to the
    version the webhook registered for, under ``matchPolicy: Equivalent``);
    ``request_kind``/``request_resource``/``request_sub_resource`` the original request
    (the plain ones when kube-apiserver leaves them out). ``object`` and ``old_object``
    are the raw JSON objects (``None`` where kube sends ``null``: ``old_object`` on
    CREATE, ``object`` on DELETE). ``options`` is the CreateOptions, UpdateOptions or
    DeleteOptions of the request. ``dry_run`` is true for ``dryRun=All`` requests: a
    handler must then have no side effects.
    """

    uid: str
    kind: GroupVersionKind
    resource: GroupVersionResource
    operation: Operation
    name: str = ""
    namespace: str = ""
    sub_resource: str = ""
    request_kind: GroupVersionKind | None = None
    request_resource: GroupVersionResource | None = None
    request_sub_resource: str = ""
    user_info: UserInfo = field(default_factory=UserInfo)
    object: dict[str, Any] | None = None
    old_object: dict[str, Any] | None = None
    dry_run: bool = False
    options: dict[str, Any] | None = None


def _str(req: Mapping[str, Any], key: str, where: str = "request") -> str:
    value = req.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ReviewError(f"{where}.{key} must be a string")
    return value


def _gvk(req: Mapping[str, Any], key: str, required: bool) -> GroupVersionKind | None:
    value = req.get(key)
    if value is None:
        if required:
            raise ReviewError(f"request.{key} is missing")
        return None
    if not isinstance(value, dict):
        raise ReviewError(f"request.{key} must be an object with group, version and kind")
    where = f"request.{key}"
    gvk = GroupVersionKind(
        _str(value, "group", where), _str(value, "version", where), _str(value, "kind", where)
    )
    if required and not (gvk.version and gvk.kind):
        raise ReviewError(f"request.{key} needs a version and a kind")
    return gvk


def _gvr(req: Mapping[str, Any], key: str, required: bool) -> GroupVersionResource | None:
    value = req.get(key)
    if value is None:
        if required:
            raise ReviewError(f"request.{key} is missing")
        return None
    if not isinstance(value, dict):
        raise ReviewError(f"request.{key} must be an object with group, version and resource")
    where = f"request.{key}"
    return GroupVersionResource(
        _str(value, "group", where), _str(value, "version", where), _str(value, "resource", where)
    )


def _object(req: Mapping[str, Any], key: str) -> dict[str, Any] | None:
    value = req.get(key)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ReviewError(f"request.{key} must be a JSON object or null")
    return value


def _user_info(req: Mapping[str, Any]) -> UserInfo:
    value = req.get("userInfo")
    if value is None:
        return UserInfo()
    if not isinstance(value, dict):
        raise ReviewError("request.userInfo must be an object")
    groups = value.get("groups") or []
    if not isinstance(groups, list) or not all(isinstance(g, str) for g in groups):
        raise ReviewError("request.userInfo.groups must be a list of strings")
    extra_in = value.get("extra") or {}
    if not isinstance(extra_in, dict):
        raise ReviewError("request.userInfo.extra must be an object")
    extra: dict[str, tuple[str, ...]] = {}
    for k, v in extra_in.items():
        if not isinstance(v, list) or not all(isinstance(s, str) for s in v):
            raise ReviewError(f"request.userInfo.extra[{k!r}] must be a list of strings")
        extra[k] = tuple(v)
    return UserInfo(
        _str(value, "username", "request.userInfo"),
        _str(value, "uid", "request.userInfo"),
        tuple(groups),
        extra,
    )


def parse_admission_review(review: Mapping[str, Any]) -> tuple[str, AdmissionRequest]:
    """The review's apiVersion (to answer in) and its request.

    Raises :class:`ReviewError` for a body that is not an ``admission.k8s.io/v1`` or
    ``v1beta1`` AdmissionReview with a request carrying a uid, kind, resource and a known
    operation, or whose fields have the wrong JSON types.
    """
    api_version = review.get("apiVersion")
    kind = review.get("kind")
    if kind != "AdmissionReview" or api_version not in ADMISSION_VERSIONS:
        raise ReviewError(
            f"expected an AdmissionReview of {' or '.join(ADMISSION_VERSIONS)}, "
            f"got apiVersion={api_version!r} kind={kind!r}"
        )
    req = review.get("request")
    if not isinstance(req, dict):
        raise ReviewError(
            "the AdmissionReview has no request" if req is None else "request must be an object"
        )
    uid = req.get("uid")
    if not isinstance(uid, str) or not uid:
        raise ReviewError(
            "request.uid is missing" if uid in (None, "") else "request.uid must be a string"
        )
    operation = req.get("operation")
    if operation not in _OPERATIONS:
        raise ReviewError(
            f"request.operation must be one of CREATE, UPDATE, DELETE, CONNECT, not {operation!r}"
        )
    dry_run = req.get("dryRun", False)
    if dry_run is None:
        dry_run = False
    if not isinstance(dry_run, bool):
        raise ReviewError("request.dryRun must be a boolean")
    kind_ = _gvk(req, "kind", True)
    resource = _gvr(req, "resource", True)
    assert kind_ is not None and resource is not None
    options = req.get("options")
    if options is not None and not isinstance(options, dict):
        raise ReviewError("request.options must be an object")
    return str(api_version), AdmissionRequest(
        uid=uid,
        kind=kind_,
        resource=resource,
        operation=operation,
        name=_str(req, "name"),
        namespace=_str(req, "namespace"),
        sub_resource=_str(req, "subResource"),
        request_kind=_gvk(req, "requestKind", False),
        request_resource=_gvr(req, "requestResource", False),
        request_sub_resource=_str(req, "requestSubResource"),
        user_info=_user_info(req),
        object=_object(req, "object"),
        old_object=_object(req, "oldObject"),
        dry_run=dry_run,
        options=options,
    )


def admission_response(
    api_version: str,
    uid: str,
    verdict: Allowed | Denied,
    patch: str | None = None,
) -> dict[str, Any]:
    """The AdmissionReview answering request ``uid`` in ``api_version``.

    ``patch`` (base64 JSON Patch text) is written with ``patchType: JSONPatch`` and only
    on an allowed answer. Empty warnings and audit annotations are left out.
    """
    response: dict[str, Any] = {"uid": uid, "allowed": isinstance(verdict, Allowed)}
    if isinstance(verdict, Denied):
        response["status"] = verdict.status()
    elif patch is not None:
        response["patch"] = patch
        response["patchType"] = "JSONPatch"
    if verdict.warnings:
        response["warnings"] = list(verdict.warnings)
    if verdict.audit_annotations:
        response["auditAnnotations"] = dict(verdict.audit_annotations)
    return {"apiVersion": api_version, "kind": "AdmissionReview", "response": response}
