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

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypeVar, cast

import orjson

from kubewerk.core.gvk import GroupVersionKind, GroupVersionResource
from kubewerk.webhook.results import Allowed, Denied

__all__ = [
    "ADMISSION_VERSIONS",
    "AdmissionRequest",
    "Operation",
    "ReviewError",
    "UserInfo",
    "admission_json",
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


class _UserInfoDraft:
    """:class:`UserInfo`'s slot layout without its frozen ``__setattr__``: see
    :func:`_request`."""

    __slots__ = UserInfo.__slots__
    username: str
    uid: str
    groups: tuple[str, ...]
    extra: Mapping[str, tuple[str, ...]]


class _RequestDraft:
    """:class:`AdmissionRequest`'s slot layout without its frozen ``__setattr__``: see
    :func:`_request`."""

    __slots__ = AdmissionRequest.__slots__
    uid: str
    kind: GroupVersionKind
    resource: GroupVersionResource
    operation: Operation
    name: str
    namespace: str
    sub_resource: str
    request_kind: GroupVersionKind | None
    request_resource: GroupVersionResource | None
    request_sub_resource: str
    user_info: UserInfo
    object: dict[str, Any] | None
    old_object: dict[str, Any] | None
    dry_run: bool
    options: dict[str, Any] | None


_new = object.__new__


def _user(
    username: str, uid: str, groups: tuple[str, ...], extra: Mapping[str, tuple[str, ...]]
) -> UserInfo:
    """``UserInfo(username, uid, groups, extra)``, built as :func:`_request` builds."""
    draft = _new(_UserInfoDraft)
    draft.username = username
    draft.uid = uid
    draft.groups = groups
    draft.extra = extra
    draft.__class__ = UserInfo  # type: ignore[assignment]
    return draft  # type: ignore[return-value]


def _request(
    uid: str,
    kind: GroupVersionKind,
    resource: GroupVersionResource,
    operation: Operation,
    name: str,
    namespace: str,
    sub_resource: str,
    request_kind: GroupVersionKind | None,
    request_resource: GroupVersionResource | None,
    request_sub_resource: str,
    user_info: UserInfo,
    obj: dict[str, Any] | None,
    old_object: dict[str, Any] | None,
    dry_run: bool,
    options: dict[str, Any] | None,
) -> AdmissionRequest:
    """``AdmissionRequest(...)`` with every field given, in field order: the same
    object (its class, every field), built for a fifth of the cost.

    A frozen dataclass's ``__init__`` sets each field through ``object.__setattr__``
    (~1.5k instructions a field, 15 fields per request). Here the fields are stored
    into an instance of a class with the very same slots (plain attribute stores)
    which then becomes an :class:`AdmissionRequest` by ``__class__`` assignment
    (CPython allows it only between classes of identical layout). The dataclass
    defines no ``__post_init__`` and no field conversion, so nothing is skipped;
    tests hold the result equal to the constructor's, field by field.
    """
    draft = _new(_RequestDraft)
    draft.uid = uid
    draft.kind = kind
    draft.resource = resource
    draft.operation = operation
    draft.name = name
    draft.namespace = namespace
    draft.sub_resource = sub_resource
    draft.request_kind = request_kind
    draft.request_resource = request_resource
    draft.request_sub_resource = request_sub_resource
    draft.user_info = user_info
    draft.object = obj
    draft.old_object = old_object
    draft.dry_run = dry_run
    draft.options = options
    draft.__class__ = AdmissionRequest  # type: ignore[assignment]
    return draft  # type: ignore[return-value]


def _bad(field: str, what: str) -> ReviewError:
    return ReviewError(f"request.{field} must be {what}")


def _strings(req: Mapping[str, Any], where: str, *keys: str) -> list[str]:
    """The string fields ``keys`` of ``req`` (``""`` when absent or null)."""
    out = []
    for key in keys:
        value = req.get(key)
        if value is None:
            value = ""
        elif type(value) is not str:
            raise _bad(f"{where}{key}", "a string")
        out.append(value)
    return out


_GVK_CACHE: dict[tuple[str, str, str], GroupVersionKind] = {}
_GVR_CACHE: dict[tuple[str, str, str], GroupVersionResource] = {}
_CACHE_LIMIT: Final = 256
_CACHE_NAME_BYTES: Final = 384
"""At most ``_CACHE_LIMIT`` distinct kinds (and as many resources) are kept for reuse,
and only those whose three names together are at most ``_CACHE_NAME_BYTES`` long (a
group is at most 253 characters, a version and a kind or resource name at most 63): a
server answers the same few on every request; any other request builds its own (the
cached values are immutable tuples, equal to what would be built)."""


def _reusable(cache: dict[Any, Any], g: str, v: str, name: str) -> bool:
    return len(cache) < _CACHE_LIMIT and len(g) + len(v) + len(name) <= _CACHE_NAME_BYTES


def _gvk(req: Mapping[str, Any], key: str) -> GroupVersionKind | None:
    value = req.get(key)
    if value is None:
        return None
    if type(value) is not dict:
        raise _bad(key, "an object with group, version and kind")
    g, v, k = value.get("group"), value.get("version"), value.get("kind")
    if type(g) is str and type(v) is str and type(k) is str:  # what kube-apiserver sends
        triple = (g, v, k)
        found = _GVK_CACHE.get(triple)
        if found is None:
            found = GroupVersionKind(g, v, k)
            if _reusable(_GVK_CACHE, g, v, k):
                _GVK_CACHE[triple] = found
        return found
    return GroupVersionKind(*_strings(value, f"{key}.", "group", "version", "kind"))


def _gvr(req: Mapping[str, Any], key: str) -> GroupVersionResource | None:
    value = req.get(key)
    if value is None:
        return None
    if type(value) is not dict:
        raise _bad(key, "an object with group, version and resource")
    g, v, r = value.get("group"), value.get("version"), value.get("resource")
    if type(g) is str and type(v) is str and type(r) is str:
        triple = (g, v, r)
        found = _GVR_CACHE.get(triple)
        if found is None:
            found = GroupVersionResource(g, v, r)
            if _reusable(_GVR_CACHE, g, v, r):
                _GVR_CACHE[triple] = found
        return found
    return GroupVersionResource(*_strings(value, f"{key}.", "group", "version", "resource"))


_T = TypeVar("_T")


def _same_or(
    parsed: _T,
    req: Mapping[str, Any],
    key: str,
    other: str,
    read: Callable[[Mapping[str, Any], str], _T | None],
) -> _T | None:
    """``read(req, other)``, or ``parsed`` (``read(req, key)``) when ``req[other]`` is a
    dict equal to ``req[key]``, as kube-apiserver sends requestKind/requestResource
    unless a conversion happened: equal dicts read equal (``read`` depends only on the
    members' values), so this is ``read(req, other)`` for one comparison."""
    value = req.get(other)
    if type(value) is dict and value == req.get(key):
        return parsed
    return read(req, other)


def _object(req: Mapping[str, Any], key: str) -> dict[str, Any] | None:
    value = req.get(key)
    if value is None or type(value) is dict:
        return value
    raise _bad(key, "a JSON object or null")


def _string_list(value: Any, field: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if type(value) is not list:
        raise _bad(field, "a list of strings")
    for item in value:
        if type(item) is not str:
            raise _bad(field, "a list of strings")
    return tuple(value)


def _user_info(req: Mapping[str, Any]) -> UserInfo:
    value = req.get("userInfo")
    if value is None:
        return _NOBODY
    if type(value) is not dict:
        raise _bad("userInfo", "an object")
    username, uid = value.get("username"), value.get("uid")
    if not ((type(username) is str or username is None) and (type(uid) is str or uid is None)):
        username, uid = _strings(value, "userInfo.", "username", "uid")
    groups = _string_list(value.get("groups"), "userInfo.groups")
    extra_in = value.get("extra")
    extra: dict[str, tuple[str, ...]] = {}
    if extra_in is not None:
        if type(extra_in) is not dict:
            raise _bad("userInfo.extra", "an object")
        for k, v in extra_in.items():
            extra[k] = _string_list(v, f"userInfo.extra[{k!r}]")
    return _user(username or "", uid or "", groups, extra)


_NOBODY = UserInfo()


_str = str
_dict = dict
_list = list
_bool = bool


def _plain_user(value: dict[str, Any]) -> UserInfo | None:
    """:func:`_user_info` of a ``userInfo`` whose members all have their usual JSON
    types (username, uid: string or null; groups: null or a list of strings; extra:
    null or an object of null or lists of strings); None for any other."""
    username, uid = value.get("username"), value.get("uid")
    groups, extra_in = value.get("groups"), value.get("extra")
    if not (
        (username is None or username.__class__ is _str) and (uid is None or uid.__class__ is _str)
    ):
        return None
    if groups is None:
        groups = ()
    elif groups.__class__ is _list:
        for item in groups:
            if item.__class__ is not _str:
                return None
        groups = tuple(groups)
    else:
        return None
    extra: dict[str, tuple[str, ...]] = {}
    if extra_in is not None:
        if extra_in.__class__ is not _dict:
            return None
        for key, values in extra_in.items():
            if values is None:
                extra[key] = ()
                continue
            if values.__class__ is not _list:
                return None
            for item in values:
                if item.__class__ is not _str:
                    return None
            extra[key] = tuple(values)
    return _user(username or "", uid or "", groups, extra)


def _plain_request(req: dict[str, Any], uid: str, operation: str) -> AdmissionRequest | None:
    """The request of a review as kube-apiserver writes it, or None.

    The request :func:`parse_admission_review` would build from ``req`` (a dict, with
    ``uid`` and ``operation`` already checked), when every member has its usual JSON
    type, kind and resource are known to the reuse caches with a version and a kind,
    and requestKind/requestResource are objects equal to them; None otherwise, and the
    caller then reads ``req`` with every check (and error message) of the full path.
    Only ``is``/class tests and reads come before the two dict comparisons, which the
    full path makes too; nothing here raises.
    """
    get = req.get
    kind, resource = get("kind"), get("resource")
    name, namespace = get("name"), get("namespace")
    sub, request_sub = get("subResource"), get("requestSubResource")
    dry_run, options = get("dryRun"), get("options")
    obj, old, user = get("object"), get("oldObject"), get("userInfo")
    if not (
        kind.__class__ is _dict
        and resource.__class__ is _dict
        and (name is None or name.__class__ is _str)
        and (namespace is None or namespace.__class__ is _str)
        and (sub is None or sub.__class__ is _str)
        and (request_sub is None or request_sub.__class__ is _str)
        and (dry_run is None or dry_run.__class__ is _bool)
        and (options is None or options.__class__ is _dict)
        and (obj is None or obj.__class__ is _dict)
        and (old is None or old.__class__ is _dict)
        and (user is None or user.__class__ is _dict)
    ):
        return None
    g, v, k = kind.get("group"), kind.get("version"), kind.get("kind")
    rg, rv, rr = resource.get("group"), resource.get("version"), resource.get("resource")
    if not (
        g.__class__ is _str
        and v.__class__ is _str
        and k.__class__ is _str
        and v
        and k
        and rg.__class__ is _str
        and rv.__class__ is _str
        and rr.__class__ is _str
    ):
        return None
    kind_ = _GVK_CACHE.get((g, v, k))
    resource_ = _GVR_CACHE.get((rg, rv, rr))
    if kind_ is None or resource_ is None:
        return None
    request_kind, request_resource = get("requestKind"), get("requestResource")
    if not (
        request_kind.__class__ is _dict
        and request_resource.__class__ is _dict
        and request_kind == kind
        and request_resource == resource
    ):
        return None
    user_info = _NOBODY if user is None else _plain_user(user)
    if user_info is None:
        return None
    # _request(...) spelled out (a call of 15 arguments costs ~1k instructions); tests
    # hold every field equal to the full path's
    draft = _new(_RequestDraft)
    draft.uid = uid
    draft.kind = kind_
    draft.resource = resource_
    draft.operation = operation  # type: ignore[assignment]  # one of _OPERATIONS
    draft.name = name or ""
    draft.namespace = namespace or ""
    draft.sub_resource = sub or ""
    draft.request_kind = kind_
    draft.request_resource = resource_
    draft.request_sub_resource = request_sub or ""
    draft.user_info = user_info
    draft.object = obj
    draft.old_object = old
    draft.dry_run = dry_run is True
    draft.options = options
    draft.__class__ = AdmissionRequest  # type: ignore[assignment]
    return draft  # type: ignore[return-value]


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
    if type(req) is not dict:
        if req is None:
            raise ReviewError("the AdmissionReview has no request")
        raise ReviewError("request must be an object")
    uid = req.get("uid")
    if type(uid) is not str or not uid:
        if uid is None or uid == "":
            raise ReviewError("request.uid is missing")
        raise _bad("uid", "a string")
    operation = req.get("operation")
    if operation.__class__ is _str and operation in _OPERATIONS:
        plain = _plain_request(req, uid, operation)
        if plain is not None:
            return api_version, plain
    try:
        known = operation in _OPERATIONS
    except TypeError:  # a list or an object: unhashable, and no operation either
        known = False
    if not known:
        raise ReviewError(
            f"request.operation must be one of CREATE, UPDATE, DELETE, CONNECT, not {operation!r}"
        )
    dry_run = req.get("dryRun")
    if dry_run is None:
        dry_run = False
    elif type(dry_run) is not bool:
        raise _bad("dryRun", "a boolean")
    kind_ = _gvk(req, "kind")
    if kind_ is None:
        raise ReviewError("request.kind is missing")
    if not (kind_.version and kind_.kind):
        raise ReviewError("request.kind needs a version and a kind")
    resource = _gvr(req, "resource")
    if resource is None:
        raise ReviewError("request.resource is missing")
    options = req.get("options")
    if options is not None and type(options) is not dict:
        raise _bad("options", "an object")
    name, namespace = req.get("name"), req.get("namespace")
    sub, request_sub = req.get("subResource"), req.get("requestSubResource")
    if not (
        (type(name) is str or name is None)
        and (type(namespace) is str or namespace is None)
        and (type(sub) is str or sub is None)
        and (type(request_sub) is str or request_sub is None)
    ):  # the first one that is neither names itself in the error
        name, namespace, sub, request_sub = _strings(
            req, "", "name", "namespace", "subResource", "requestSubResource"
        )
    return api_version, _request(
        uid,
        kind_,
        resource,
        cast(Operation, operation),  # one of _OPERATIONS
        name or "",
        namespace or "",
        sub or "",
        _same_or(kind_, req, "kind", "requestKind", _gvk),
        _same_or(resource, req, "resource", "requestResource", _gvr),
        request_sub or "",
        _user_info(req),
        _object(req, "object"),
        _object(req, "oldObject"),
        dry_run,
        options,
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


_dumps = orjson.dumps
_ANSWER_HEADS: Final = {
    version: b'{"apiVersion":' + _dumps(version) + b',"kind":"AdmissionReview","response":{"uid":'
    for version in ADMISSION_VERSIONS
}
_ALLOWED_TAIL: Final = b',"allowed":true}}'
_PATCH_HEAD: Final = b',"allowed":true,"patch":'
_PATCH_TAIL: Final = b',"patchType":"JSONPatch"}}'


def admission_json(
    api_version: str,
    uid: str,
    verdict: Allowed | Denied,
    patch: str | None = None,
) -> bytes:
    """``orjson.dumps(admission_response(api_version, uid, verdict, patch))``, byte for
    byte, and the same exceptions.

    The common answer, an :class:`Allowed` itself (not a subclass) with no warnings or
    audit annotations in one of :data:`ADMISSION_VERSIONS`, with or without a patch, is
    written from fixed pieces around the encoded uid (and patch) instead of building the
    dicts and encoding them: orjson writes a dict as its members in order, each key and
    value as it would write them alone, with no spaces, so the pieces joined are the
    very bytes of the whole. Any other answer is built and encoded as before.
    """
    if verdict.__class__ is Allowed and not verdict.warnings and not verdict.audit_annotations:
        head = _ANSWER_HEADS.get(api_version) if api_version.__class__ is str else None
        if head is not None:
            if patch is None:
                return b"".join((head, _dumps(uid), _ALLOWED_TAIL))
            return b"".join((head, _dumps(uid), _PATCH_HEAD, _dumps(patch), _PATCH_TAIL))
    return _dumps(admission_response(api_version, uid, verdict, patch))
