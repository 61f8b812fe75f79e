"""The AdmissionReview envelope: every field read as kube-apiserver sends it, every wrong
JSON type refused with the message naming the first wrong field (the fast paths for
well-typed fields decide exactly as the field-by-field checks)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubewerk.core.gvk import GroupVersionKind, GroupVersionResource
from kubewerk.webhook import review as review_module
from kubewerk.webhook.review import ReviewError, UserInfo, parse_admission_review

HOSTILE: list[Any] = [None, "", "x", 0, 1, True, False, 1.5, [], ["a"], ["a", 1], {}, {"a": "b"}]


def _review() -> dict[str, Any]:
    gvk = {"group": "g.example.com", "version": "v1", "kind": "Thing"}
    gvr = {"group": "g.example.com", "version": "v1", "resource": "things"}
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "u-1",
            "kind": gvk,
            "resource": gvr,
            "requestKind": dict(gvk),
            "requestResource": dict(gvr),
            "name": "n",
            "namespace": "ns",
            "subResource": "status",
            "requestSubResource": "status",
            "operation": "UPDATE",
            "userInfo": {"username": "alice", "uid": "7", "groups": ["a", "b"]},
            "object": {},
            "oldObject": None,
        },
    }


def _expect_string(value: Any, field: str) -> str:
    """What a string field of the envelope reads as, or the error it gives."""
    if value is None:
        return ""
    if type(value) is not str:
        raise ReviewError(f"request.{field} must be a string")
    return value


def _outcome(body: dict[str, Any]) -> Any:
    try:
        _, req = parse_admission_review(body)
    except ReviewError as exc:
        return ("error", str(exc))
    return ("ok", req)


STRING_FIELDS = [
    ("name", "name"),
    ("namespace", "namespace"),
    ("subResource", "sub_resource"),
    ("requestSubResource", "request_sub_resource"),
]


@pytest.mark.parametrize(("key", "attribute"), STRING_FIELDS)
@pytest.mark.parametrize("value", HOSTILE, ids=repr)
def test_string_fields(key: str, attribute: str, value: Any) -> None:
    body = _review()
    body["request"][key] = value
    try:
        want: Any = ("ok", _expect_string(value, key))
    except ReviewError as exc:
        want = ("error", str(exc))
    got = _outcome(body)
    if want[0] == "ok":
        assert got[0] == "ok" and getattr(got[1], attribute) == want[1]
    else:
        assert got == want


def test_the_first_wrong_string_field_is_named() -> None:
    body = _review()
    body["request"]["requestSubResource"] = 1
    body["request"]["namespace"] = ["x"]
    assert _outcome(body) == ("error", "request.namespace must be a string")
    del body["request"]["name"]
    body["request"]["name"] = 3  # order of fields in the check, not in the JSON
    assert _outcome(body) == ("error", "request.name must be a string")


@pytest.mark.parametrize("key", ["username", "uid"])
@pytest.mark.parametrize("value", HOSTILE, ids=repr)
def test_user_name_and_uid(key: str, value: Any) -> None:
    body = _review()
    body["request"]["userInfo"][key] = value
    got = _outcome(body)
    if value is None or type(value) is str:
        assert got[0] == "ok"
        assert getattr(got[1].user_info, key) == (value or "")
    else:
        assert got == ("error", f"request.userInfo.{key} must be a string")


@pytest.mark.parametrize("value", HOSTILE, ids=repr)
def test_user_groups(value: Any) -> None:
    body = _review()
    body["request"]["userInfo"]["groups"] = value
    got = _outcome(body)
    if value is None:
        assert got[0] == "ok" and got[1].user_info.groups == ()
    elif type(value) is list and all(type(v) is str for v in value):
        assert got[0] == "ok" and got[1].user_info.groups == tuple(value)
    else:
        assert got == ("error", "request.userInfo.groups must be a list of strings")


def test_user_info_defaults_and_extra() -> None:
    body = _review()
    body["request"]["userInfo"] = {"extra": {"scopes": ["a"], "none": None}}
    _, req = parse_admission_review(body)
    assert req.user_info == UserInfo("", "", (), {"scopes": ("a",), "none": ()})
    body["request"]["userInfo"] = {"username": "bob", "uid": 1}
    assert _outcome(body) == ("error", "request.userInfo.uid must be a string")
    body["request"]["userInfo"] = {"username": 1, "uid": 1}
    assert _outcome(body) == ("error", "request.userInfo.username must be a string")
    body["request"]["userInfo"] = {"extra": {"k": ["a", 2]}}
    assert _outcome(body) == ("error", "request.userInfo.extra['k'] must be a list of strings")
    # each request gets its own extra mapping
    first = parse_admission_review(_review())[1].user_info.extra
    assert first is not parse_admission_review(_review())[1].user_info.extra


@pytest.mark.parametrize("key", ["kind", "requestKind", "resource", "requestResource"])
@pytest.mark.parametrize("member", ["group", "version", "kind", "resource"])
@pytest.mark.parametrize("value", [None, "", "y", 1, True, ["v1"], {}], ids=repr)
def test_kinds_and_resources(key: str, member: str, value: Any) -> None:
    body = _review()
    is_kind = key.endswith("Kind") or key == "kind"
    if (member == "resource") == is_kind:
        return  # a kind has no resource member, a resource no kind
    body["request"][key][member] = value
    got = _outcome(body)
    if value is not None and type(value) is not str:
        assert got == ("error", f"request.{key}.{member} must be a string")
        return
    if key == "kind" and member in ("version", "kind") and not value:
        assert got == ("error", "request.kind needs a version and a kind")
        return
    assert got[0] == "ok"
    triple = dict(body["request"][key])
    cls = GroupVersionKind if is_kind else GroupVersionResource
    want = cls(*((triple.get(m) or "") for m in cls._fields))
    attribute = {
        "kind": "kind",
        "requestKind": "request_kind",
        "resource": "resource",
        "requestResource": "request_resource",
    }[key]
    assert getattr(got[1], attribute) == want
    assert type(getattr(got[1], attribute)) is cls


def test_kinds_beyond_the_reuse_bound_are_still_read() -> None:
    before = len(review_module._GVK_CACHE)
    seen = []
    for i in range(review_module._CACHE_LIMIT + 20):
        body = _review()
        body["request"]["kind"] = {"group": "g.example.com", "version": "v1", "kind": f"K{i}"}
        _, req = parse_admission_review(copy.deepcopy(body))
        assert req.kind == GroupVersionKind("g.example.com", "v1", f"K{i}")
        seen.append(req.kind)
    assert len(review_module._GVK_CACHE) <= review_module._CACHE_LIMIT
    assert len(review_module._GVK_CACHE) >= min(before, review_module._CACHE_LIMIT)
    again = parse_admission_review(_review())[1]
    assert again.kind == GroupVersionKind("g.example.com", "v1", "Thing")


def test_long_names_are_read_but_not_kept() -> None:
    body = _review()
    long_kind = "K" * 100_000
    body["request"]["kind"] = {"group": "g.example.com", "version": "v1", "kind": long_kind}
    body["request"]["resource"] = {"group": "g" * 5000, "version": "v1", "resource": "r"}
    _, req = parse_admission_review(body)
    assert req.kind == GroupVersionKind("g.example.com", "v1", long_kind)
    assert req.resource == GroupVersionResource("g" * 5000, "v1", "r")
    assert all(len(k) < 1000 for key in review_module._GVK_CACHE for k in key)
    assert all(len(k) < 1000 for key in review_module._GVR_CACHE for k in key)


def _same_as_constructed(request: Any) -> None:
    """``request`` is what the dataclass constructor builds from its fields: the same
    class, every field set and equal, still frozen."""
    import dataclasses

    assert type(request) is review_module.AdmissionRequest
    values = [getattr(request, f.name) for f in dataclasses.fields(request)]
    assert request == review_module.AdmissionRequest(*values)
    assert type(request.user_info) is UserInfo
    user = request.user_info
    assert user == UserInfo(user.username, user.uid, user.groups, user.extra)
    for frozen in (request, user):
        with pytest.raises(dataclasses.FrozenInstanceError):
            frozen.uid = "changed"


def test_drafts_have_the_dataclass_layouts() -> None:
    # the fast builders store into classes of the very same slots; a field added to the
    # dataclass without its draft would make __class__ assignment fail or leave it unset
    assert review_module._RequestDraft.__slots__ == review_module.AdmissionRequest.__slots__
    assert review_module._UserInfoDraft.__slots__ == UserInfo.__slots__


@pytest.mark.parametrize(
    "change",
    [
        {},
        {"operation": "CREATE", "oldObject": None, "subResource": None},
        {"operation": "DELETE", "object": None, "oldObject": {"a": [1]}, "dryRun": True},
        {"userInfo": None, "requestKind": None, "requestResource": None, "name": None},
        {"userInfo": {"extra": {"k": ["v", "w"]}, "groups": []}, "options": {"kind": "X"}},
    ],
    ids=["update", "create", "delete-dry-run", "no-user-no-request-kind", "extra-options"],
)
def test_parsed_requests_equal_constructed_ones(change: dict[str, Any]) -> None:
    body = _review()
    body["request"].update(change)
    _, request = parse_admission_review(body)
    _same_as_constructed(request)
    # every field is set (an unset slot would raise on reading)
    for name in review_module.AdmissionRequest.__slots__:
        getattr(request, name)


def test_fast_builders_equal_the_constructors() -> None:
    gvk = GroupVersionKind("g", "v", "K")
    gvr = GroupVersionResource("g", "v", "ks")
    user = review_module._user("u", "1", ("a",), {"x": ("y",)})
    assert user == UserInfo("u", "1", ("a",), {"x": ("y",)})
    values: list[Any] = [
        "uid",
        gvk,
        gvr,
        "UPDATE",
        "n",
        "ns",
        "s",
        gvk,
        gvr,
        "rs",
        user,
        {"o": 1},
        {"p": 2},
        True,
        {"q": 3},
    ]
    built = review_module._request(*values)
    assert built == review_module.AdmissionRequest(*values)
    assert [getattr(built, name) for name in review_module.AdmissionRequest.__slots__] == values
    _same_as_constructed(built)


@pytest.mark.parametrize(
    "request_kind",
    [
        {"group": "g.example.com", "version": "v1", "kind": "Thing"},
        {"group": "g.example.com", "version": "v2", "kind": "Thing"},
        {"group": "g.example.com", "version": "v1"},
        {"group": "g.example.com", "version": "v1", "kind": "Thing", "extra": 1},
        {"group": None, "version": "v1", "kind": "Thing"},
    ],
    ids=["equal", "converted", "no-kind", "more-members", "null-group"],
)
def test_request_kind_equal_or_not_reads_as_its_own(request_kind: dict[str, Any]) -> None:
    body = _review()
    body["request"]["requestKind"] = request_kind
    resource = dict(request_kind, resource="things")
    resource.pop("kind", None)
    body["request"]["requestResource"] = resource
    _, request = parse_admission_review(body)
    assert request.request_kind == review_module._gvk(
        request_kind and body["request"], "requestKind"
    )
    assert request.request_resource == review_module._gvr(body["request"], "requestResource")


@pytest.mark.parametrize("value", [[], ["CREATE"], {}, {"CREATE": 1}], ids=repr)
def test_an_unhashable_operation_is_refused_as_unknown(value: Any) -> None:
    # a list or an object is no operation: a 400 like any other, not a TypeError (500)
    body = _review()
    body["request"]["operation"] = value
    assert _outcome(body) == (
        "error",
        f"request.operation must be one of CREATE, UPDATE, DELETE, CONNECT, not {value!r}",
    )
