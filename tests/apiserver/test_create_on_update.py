"""A PUT of an object that does not exist, as kube's generic store answers it
(k8s.io/apiserver pkg/registry/generic/registry/store.go ``Update``): the kinds whose
strategy's ``AllowCreateOnUpdate`` is true (Endpoints, Events in both groups,
LimitRanges, Leases, Services, the four RBAC kinds) are created (201, the create path),
every other kind stays 404. The body's resourceVersion is no precondition there; a uid
is (409). In process, one server for the module."""

from __future__ import annotations

from typing import Any

import pytest

from kubewerk.apiserver.app import ApiServer
from kubewerk.apiserver.kinds.rbac import install_rbac
from kubewerk.apiserver.storage import open_store
from tests.apiserver.helpers import json_call

NS = "/api/v1/namespaces/default"
RBAC = "/apis/rbac.authorization.k8s.io/v1"


@pytest.fixture(scope="module")
def app() -> ApiServer:
    server = ApiServer(open_store("memory"))
    install_rbac(server)
    return server


def _event(api_version: str, name: str) -> dict[str, Any]:
    if api_version == "v1":
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name},
            "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
            "reason": "Started",
            "message": "started",
            "type": "Normal",
            "source": {"component": "test"},
        }
    return {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": name},
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "reportingController": "example.com/test",
        "reportingInstance": "test-1",
        "action": "Start",
        "reason": "Started",
        "type": "Normal",
        "regarding": {"kind": "Pod", "name": "p", "namespace": "default"},
    }


# (id, collection path, body without metadata.name)
CREATABLE: list[tuple[str, str, dict[str, Any]]] = [
    (
        "lease",
        "/apis/coordination.k8s.io/v1/namespaces/default/leases",
        {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "spec": {"holderIdentity": "a"}},
    ),
    ("endpoints", f"{NS}/endpoints", {"apiVersion": "v1", "kind": "Endpoints"}),
    (
        "limitrange",
        f"{NS}/limitranges",
        {
            "apiVersion": "v1",
            "kind": "LimitRange",
            "spec": {"limits": [{"type": "Container", "max": {"cpu": "1"}}]},
        },
    ),
    (
        "service",
        f"{NS}/services",
        {
            "apiVersion": "v1",
            "kind": "Service",
            "spec": {"ports": [{"port": 80}], "selector": {"app": "a"}},
        },
    ),
    ("event", f"{NS}/events", _event("v1", "")),
    ("events-k8s-io", "/apis/events.k8s.io/v1/namespaces/default/events", _event("events", "")),
    (
        "role",
        f"{RBAC}/namespaces/default/roles",
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role"},
    ),
    (
        "clusterrole",
        f"{RBAC}/clusterroles",
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole"},
    ),
    (
        "rolebinding",
        f"{RBAC}/namespaces/default/rolebindings",
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
        },
    ),
    (
        "clusterrolebinding",
        f"{RBAC}/clusterrolebindings",
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "r",
            },
        },
    ),
]

NOT_CREATABLE: list[tuple[str, str, dict[str, Any]]] = [
    ("configmap", f"{NS}/configmaps", {"apiVersion": "v1", "kind": "ConfigMap"}),
    ("secret", f"{NS}/secrets", {"apiVersion": "v1", "kind": "Secret"}),
    (
        "priorityclass",
        "/apis/scheduling.k8s.io/v1/priorityclasses",
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "value": 5},
    ),
    (
        "poddisruptionbudget",
        "/apis/policy/v1/namespaces/default/poddisruptionbudgets",
        {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "spec": {"minAvailable": 1}},
    ),
    (
        "endpointslice",
        "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices",
        {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "addressType": "IPv4",
            "endpoints": [],
        },
    ),
]


def _named(body: dict[str, Any], name: str, **meta: Any) -> dict[str, Any]:
    return {**body, "metadata": {"name": name, **meta}}


@pytest.mark.parametrize(
    ("name", "path", "body"), [pytest.param(i, p, b, id=i) for i, p, b in CREATABLE]
)
async def test_a_put_of_a_missing_object_creates_it(
    app: ApiServer, name: str, path: str, body: dict[str, Any]
) -> None:
    status, got = await json_call(app, "PUT", f"{path}/{name}", _named(body, name))
    assert status == 201, got
    meta = got["metadata"]
    assert meta["name"] == name
    assert meta["uid"] and meta["creationTimestamp"] and meta["resourceVersion"]
    status, stored = await json_call(app, "GET", f"{path}/{name}")
    assert status == 200, stored
    assert stored["metadata"]["uid"] == meta["uid"]
    # the next PUT updates it (200, same uid)
    status, again = await json_call(app, "PUT", f"{path}/{name}", stored)
    assert status == 200, again
    assert again["metadata"]["uid"] == meta["uid"]


@pytest.mark.parametrize(("path", "body"), [pytest.param(p, b, id=i) for i, p, b in NOT_CREATABLE])
async def test_other_kinds_stay_not_found(app: ApiServer, path: str, body: dict[str, Any]) -> None:
    status, got = await json_call(app, "PUT", f"{path}/put-missing", _named(body, "put-missing"))
    assert status == 404, got
    assert got["reason"] == "NotFound"


LEASES = "/apis/coordination.k8s.io/v1/namespaces/default/leases"
LEASE = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease"}


async def test_the_body_resource_version_is_no_precondition_on_create(app: ApiServer) -> None:
    body = _named(LEASE, "rv-lease", resourceVersion="424242", generateName="gen-")
    status, got = await json_call(app, "PUT", f"{LEASES}/rv-lease", body)
    assert status == 201, got
    assert got["metadata"]["name"] == "rv-lease"  # generateName changes nothing
    assert got["metadata"]["resourceVersion"] != "424242"


async def test_a_uid_in_the_body_is_a_precondition_nothing_meets(app: ApiServer) -> None:
    body = _named(LEASE, "uid-lease", uid="0e5c7b1d-aaaa-bbbb-cccc-000000000001")
    status, got = await json_call(app, "PUT", f"{LEASES}/uid-lease", body)
    assert status == 409, got
    assert got["reason"] == "Conflict"
    assert got["message"] == (
        'Operation cannot be fulfilled on leases.coordination.k8s.io "uid-lease": '
        "Precondition failed: UID in precondition: 0e5c7b1d-aaaa-bbbb-cccc-000000000001, "
        "UID in object meta: "
    )
    status, _ = await json_call(app, "GET", f"{LEASES}/uid-lease")
    assert status == 404


async def test_a_dry_run_put_creates_nothing(app: ApiServer) -> None:
    status, got = await json_call(
        app, "PUT", f"{LEASES}/dry-lease?dryRun=All", _named(LEASE, "dry-lease")
    )
    assert status == 201, got
    status, _ = await json_call(app, "GET", f"{LEASES}/dry-lease")
    assert status == 404


async def test_the_body_is_still_checked_against_the_url_first(app: ApiServer) -> None:
    status, got = await json_call(app, "PUT", f"{LEASES}/url-name", _named(LEASE, "other"))
    assert status == 400, got
    assert got["message"] == (
        "the name of the object (other) does not match the name on the URL (url-name)"
    )


async def test_a_put_create_in_a_missing_namespace_is_not_found(app: ApiServer) -> None:
    path = "/apis/coordination.k8s.io/v1/namespaces/nowhere/leases/l"
    status, got = await json_call(app, "PUT", path, _named(LEASE, "l"))
    assert status == 404, got
    assert got["details"]["kind"] == "namespaces"


async def test_a_body_that_does_not_decode_is_refused_before_storage_is_read(
    app: ApiServer,
) -> None:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "nowhere"}}
    status, got = await json_call(app, "PUT", f"{NS}/configmaps/nowhere", {**body, "data": 1})
    assert status == 400, got
    assert got["message"] == (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot '
        "unmarshal number into Go struct field ConfigMap.data of type map[string]string"
    )
