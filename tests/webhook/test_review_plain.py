"""The envelope's plain path (``review._plain_request``: a review as kube-apiserver
writes it, read with class tests and the kind/resource reuse caches) decides exactly as
the full field-by-field path: for every member of the request and of its userInfo set
to each hostile JSON value, the outcome with warm caches (plain path first) equals the
outcome with cold caches (full path only) — the same request field by field, or the
same error message."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest

from kubewerk.webhook import review as review_module
from kubewerk.webhook.review import AdmissionRequest, ReviewError, parse_admission_review

HOSTILE: list[Any] = [
    None,
    "",
    "x",
    "CREATE",
    0,
    1,
    True,
    False,
    1.5,
    [],
    ["a"],
    ["a", 1],
    [None],
    {},
    {"a": "b"},
    {"a": ["b"]},
    {"a": None},
    {"a": [1]},
]

REQUEST_KEYS = [
    "uid",
    "operation",
    "kind",
    "resource",
    "requestKind",
    "requestResource",
    "name",
    "namespace",
    "subResource",
    "requestSubResource",
    "dryRun",
    "options",
    "object",
    "oldObject",
    "userInfo",
]
USER_KEYS = ["username", "uid", "groups", "extra"]
MEMBER_KEYS = ["group", "version", "kind", "resource", "extra"]


def _review() -> dict[str, Any]:
    gvk = {"group": "plain.example.com", "version": "v1", "kind": "Thing"}
    gvr = {"group": "plain.example.com", "version": "v1", "resource": "things"}
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
            "operation": "UPDATE",
            "userInfo": {
                "username": "alice",
                "uid": "7",
                "groups": ["a", "b"],
                "extra": {"scopes": ["x", "y"], "none": None},
            },
            "object": {"a": 1},
            "oldObject": {"a": 0},
            "dryRun": False,
            "options": {"kind": "UpdateOptions"},
        },
    }


def _outcome(body: dict[str, Any]) -> tuple[str, Any]:
    try:
        api_version, req = parse_admission_review(body)
    except ReviewError as exc:
        return ("error", str(exc))
    fields = tuple(getattr(req, name) for name in AdmissionRequest.__slots__)
    assert type(req) is AdmissionRequest and type(req.user_info) is type(fields[10])
    return ("ok", (api_version, req, fields))


@pytest.fixture
def cold_caches(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(review_module, "_GVK_CACHE", {})
    monkeypatch.setattr(review_module, "_GVR_CACHE", {})
    yield


def _both(body: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any, int]:
    """(outcome with cold caches, outcome with warm caches, plain-path answers)."""
    monkeypatch.setattr(review_module, "_GVK_CACHE", {})
    monkeypatch.setattr(review_module, "_GVR_CACHE", {})
    cold = _outcome(copy.deepcopy(body))  # full path; fills the caches
    answered = 0
    plain = review_module._plain_request

    def counting(*args: Any) -> Any:
        nonlocal answered
        out = plain(*args)
        answered += out is not None
        return out

    monkeypatch.setattr(review_module, "_plain_request", counting)
    warm = _outcome(copy.deepcopy(body))
    monkeypatch.setattr(review_module, "_plain_request", plain)
    return cold, warm, answered


def test_a_kube_review_takes_the_plain_path(monkeypatch: pytest.MonkeyPatch) -> None:
    cold, warm, answered = _both(_review(), monkeypatch)
    assert answered == 1
    assert cold == warm and cold[0] == "ok"


@pytest.mark.parametrize("key", REQUEST_KEYS)
def test_request_members(key: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for value in HOSTILE:
        body = _review()
        body["request"][key] = value
        cold, warm, _ = _both(body, monkeypatch)
        assert cold == warm, value
    del body["request"][key]
    cold, warm, _ = _both(body, monkeypatch)
    assert cold == warm


@pytest.mark.parametrize("key", USER_KEYS)
def test_user_info_members(key: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for value in HOSTILE:
        body = _review()
        body["request"]["userInfo"][key] = value
        cold, warm, _ = _both(body, monkeypatch)
        assert cold == warm, value
        body["request"]["userInfo"]["extra"] = {"k": value}
        cold, warm, _ = _both(body, monkeypatch)
        assert cold == warm, value


@pytest.mark.parametrize("where", ["kind", "resource", "requestKind", "requestResource"])
@pytest.mark.parametrize("member", MEMBER_KEYS)
def test_kind_and_resource_members(
    where: str, member: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for value in HOSTILE:
        body = _review()
        body["request"][where][member] = value
        cold, warm, _ = _both(body, monkeypatch)
        assert cold == warm, value


@pytest.mark.parametrize("version", ["", "v1"])
@pytest.mark.parametrize("kind", ["", "Thing"])
def test_a_cached_kind_without_version_or_kind_is_still_refused(
    version: str, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the full path caches the kind before refusing it: the plain path must not accept
    # it from the cache on the next request
    monkeypatch.setattr(review_module, "_GVK_CACHE", {})
    monkeypatch.setattr(review_module, "_GVR_CACHE", {})
    body = _review()
    gvk = {"group": "plain.example.com", "version": version, "kind": kind}
    body["request"]["kind"] = gvk
    body["request"]["requestKind"] = dict(gvk)
    first = _outcome(copy.deepcopy(body))  # full path: caches the kind, then decides
    assert (first[0] == "ok") == bool(version and kind)
    _outcome(_review())  # a valid request caches the resource too
    assert _outcome(copy.deepcopy(body)) == first


def test_each_plain_request_gets_its_own_extra_mapping(cold_caches: None) -> None:
    first = parse_admission_review(_review())[1].user_info.extra
    second = parse_admission_review(_review())[1].user_info.extra
    assert first == second and first is not second


@pytest.mark.parametrize("api_version", ["admission.k8s.io/v1", "admission.k8s.io/v1beta1"])
@pytest.mark.parametrize("operation", ["CREATE", "UPDATE", "DELETE", "CONNECT"])
@pytest.mark.parametrize("dry_run", [None, True, False])
def test_operations_versions_and_dry_run(
    api_version: str, operation: str, dry_run: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = _review()
    body["apiVersion"] = api_version
    body["request"]["operation"] = operation
    body["request"]["dryRun"] = dry_run
    cold, warm, answered = _both(body, monkeypatch)
    assert cold == warm and answered == 1
    assert warm[1][1].dry_run is (dry_run is True)
