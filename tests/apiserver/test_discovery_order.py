"""Discovery lists API groups in kube-apiserver's order, not alphabetically.

kube-apiserver gives each group version an APIService priority: built-in groups their
``GroupPriorityMinimum`` from ``apiVersionPriorities`` (core 18000, apps 17800, ...), every
CRD version 1000 (crdregistration). Aggregated discovery sorts groups by their highest
priority, then by group name; the ``/apis`` ``APIGroupList`` (kube-aggregator's
``SortedByGroupAndVersion``) sorts APIServices by priority, then by APIService *name*
(``version.group``), and lists each group where its first APIService falls. Versions inside
a group: ``VersionPriority`` (built-ins from the table, every CRD version 100), then
Kubernetes' version order. kubectl takes the first match in this order for short names.
"""

from __future__ import annotations

from typing import Any

import pytest

from kubewerk.apiserver import discovery
from kubewerk.apiserver.builtins import install_builtins
from kubewerk.apiserver.kinds.custom import crd_to_type
from kubewerk.apiserver.registry import Registry, ServedResource, builtin_priority

JSON = dict[str, Any]

BUILTIN_ORDER = [
    "apps",
    "events.k8s.io",
    "autoscaling",
    "batch",
    "networking.k8s.io",
    "policy",
    "rbac.authorization.k8s.io",
    "storage.k8s.io",
    "admissionregistration.k8s.io",  # 16700 like apiextensions: v1.admissionregistration... first
    "apiextensions.k8s.io",
    "scheduling.k8s.io",
    "coordination.k8s.io",
    "discovery.k8s.io",
]


def crd(group: str, plural: str, versions: list[str], short: list[str] | None = None) -> JSON:
    kind = plural[:-1].capitalize()
    names: JSON = {"plural": plural, "singular": plural[:-1], "kind": kind}
    if short:
        names["shortNames"] = short
    return {
        "metadata": {"name": f"{plural}.{group}", "uid": f"uid-{plural}-{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": names,
            "versions": [
                {"name": v, "served": True, "storage": i == 0} for i, v in enumerate(versions)
            ],
        },
    }


def add_crd(registry: Registry, *args: Any, **kwargs: Any) -> ServedResource:
    rtype = crd_to_type(crd(*args, **kwargs))
    assert rtype is not None
    registry.add(rtype)
    return rtype


def rbac_type() -> ServedResource:
    return ServedResource(
        group="rbac.authorization.k8s.io",
        resource="roles",
        kind="Role",
        list_kind="RoleList",
        singular="role",
        namespaced=True,
        versions=["v1"],
        storage_version="v1",
    )


@pytest.fixture
def registry() -> Registry:
    """Built-ins (and rbac), then CRD groups whose name order and APIService-name order
    differ: ``a.io`` serves only v2 (``v2.a.io``), ``b.io`` v1 (``v1.b.io``), ``c.io``
    v1alpha1 and v1beta1 (``v1alpha1.c.io``), ``aa.io`` v1 (``v1.aa.io``)."""
    r = Registry()
    add_crd(r, "c.io", "gizmos", ["v1beta1", "v1alpha1"])
    add_crd(r, "a.io", "widgets", ["v2"], short=["deploy"])
    install_builtins(r)
    r.add(rbac_type())
    add_crd(r, "b.io", "gadgets", ["v1"])
    add_crd(r, "aa.io", "things", ["v1"])
    return r


def test_aggregated_order_is_priority_then_group_name(registry: Registry) -> None:
    expected = [*BUILTIN_ORDER, "a.io", "aa.io", "b.io", "c.io"]
    assert registry.group_names() == ["", *expected]
    body, _ = discovery.aggregated(registry, False, "v2")
    assert [i["metadata"]["name"] for i in body["items"]] == expected
    legacy, _ = discovery.aggregated(registry, True, "v2beta1")
    assert [i["metadata"] for i in legacy["items"]] == [{"creationTimestamp": None}]


def test_api_group_list_ties_break_by_apiservice_name(registry: Registry) -> None:
    # v1.aa.io < v1.b.io < v1alpha1.c.io < v2.a.io ("." sorts before letters and digits)
    expected = [*BUILTIN_ORDER, "aa.io", "b.io", "c.io", "a.io"]
    assert registry.group_names_by_service() == ["", *expected]
    body = discovery.api_group_list(registry)
    assert [g["name"] for g in body["groups"]] == expected


def test_core_and_apps_first_whatever_was_added_first() -> None:
    r = Registry()
    add_crd(r, "a.io", "widgets", ["v1"], short=["deploy"])
    add_crd(r, "0.io", "zeros", ["v1"])
    install_builtins(r)
    assert r.group_names()[:3] == ["", "apps", "events.k8s.io"]
    assert r.group_names()[-2:] == ["0.io", "a.io"]
    body, _ = discovery.aggregated(r, False, "v2")
    first_deploy = next(
        i["metadata"]["name"]
        for i in body["items"]
        for v in i["versions"][:1]
        for res in v["resources"]
        if res["resource"] == "deployments" or "deploy" in res.get("shortNames", [])
    )
    assert first_deploy == "apps"


def test_versions_by_version_priority_then_kube_order(registry: Registry) -> None:
    # autoscaling: v2 (VersionPriority 30) before v1 (15); CRD versions all 100
    entry = discovery.api_group(registry, "autoscaling")
    assert entry is not None
    assert [v["version"] for v in entry["versions"]] == ["v2", "v1"]
    assert entry["preferredVersion"]["version"] == "v2"
    add_crd(registry, "c.io", "sprockets", ["v1", "foo", "v10alpha1", "v2beta1"])
    assert discovery.group_versions(registry, "c.io") == [
        "v1",
        "v2beta1",
        "v1beta1",
        "v10alpha1",
        "v1alpha1",
        "foo",
    ]
    body, _ = discovery.aggregated(registry, False, "v2")
    items = {i["metadata"]["name"]: i for i in body["items"]}
    assert [v["version"] for v in items["autoscaling"]["versions"]] == ["v2", "v1"]
    assert [v["version"] for v in items["c.io"]["versions"]][:2] == ["v1", "v2beta1"]
    listed = {g["name"]: g for g in discovery.api_group_list(registry)["groups"]}
    assert listed["c.io"]["preferredVersion"]["version"] == "v1"


def test_a_new_version_can_move_a_group_in_the_api_group_list(registry: Registry) -> None:
    before = registry.group_names_by_service()
    assert before.index("a.io") > before.index("c.io")
    # a.io now also serves v1: its first APIService is v1.a.io, ahead of v1.aa.io
    add_crd(registry, "a.io", "doohickeys", ["v1"])
    names = [g["name"] for g in discovery.api_group_list(registry)["groups"]]
    assert names[-4:] == ["a.io", "aa.io", "b.io", "c.io"]
    # and back when that type goes
    registry.remove("a.io", "doohickeys")
    names = [g["name"] for g in discovery.api_group_list(registry)["groups"]]
    assert names[-4:] == ["aa.io", "b.io", "c.io", "a.io"]


def test_sorted_once_per_change_of_groups_or_their_priority(registry: Registry) -> None:
    names, by_service = registry.group_names(), registry.group_names_by_service()
    assert registry.group_names() is names and registry.group_names_by_service() is by_service
    # another type in a served group at a served version: no group moves, nothing re-sorted
    add_crd(registry, "b.io", "gears", ["v1"])
    registry.remove("aa.io", "nonexistent")
    assert registry.group_names() is names and registry.group_names_by_service() is by_service
    # a new group: sorted again
    add_crd(registry, "d.io", "dials", ["v1"])
    assert registry.group_names() is not names
    assert registry.group_names()[-1] == "d.io"
    # the last type of a group gone: the group goes
    registry.remove("d.io", "dials")
    assert "d.io" not in registry.group_names()
    assert "d.io" not in registry.group_names_by_service()


def test_a_crd_version_in_a_builtin_group_ranks_as_a_crd() -> None:
    r = Registry()
    install_builtins(r)
    add_crd(r, "storage.k8s.io", "widgets", ["v7", "v1"])
    # v1 is served by built-ins too: the built-in APIService; v7 only by the CRD: 1000/100
    assert r.api_service_priority("storage.k8s.io", "v1") == (16800, 15)
    assert r.api_service_priority("storage.k8s.io", "v7") == (1000, 100)
    assert discovery.group_versions(r, "storage.k8s.io") == ["v7", "v1"]
    assert r.group_names().index("storage.k8s.io") == r.group_names().index("policy") + 1
    # a group's unknown version, or an unknown group, is a CRD's
    assert r.api_service_priority("storage.k8s.io", "v9") == (1000, 100)
    assert r.api_service_priority("nope.io", "v1") == (1000, 100)


def test_every_builtin_group_version_has_a_priority() -> None:
    r = Registry()
    install_builtins(r)
    r.add(rbac_type())
    for t in r.all():
        for v in t.versions:
            assert builtin_priority(t.group, v) is not None, f"{t.group}/{v}"


DOCUMENTED = ["v10", "v2", "v1", "v11beta2", "v10beta3", "v3beta1", "v1beta2", "v12alpha1"]
DOCUMENTED += ["v11alpha2", "v1alpha1", "foo1", "foo10"]
"""The order apimachinery documents for ``CompareKubeAwareVersionStrings``."""
NOT_KUBE_LIKE = ["v1alpha1", "V1", "v1\n", "v1beta", "v1gamma1", "v2alpha99999999999999999999"]
NOT_KUBE_LIKE += ["v99999999999999999999", "v\u0661"]
"""After alpha, in byte order: upper case, a trailing newline, a missing stage number, a
gamma stage, numbers beyond Go's int, non-ASCII digits."""
INT_RANGE = ["v9223372036854775807", "v2", "v9223372036854775808"]
"""The largest Go int is still a number; one more is not."""


@pytest.mark.parametrize(
    "expected", [DOCUMENTED, NOT_KUBE_LIKE, INT_RANGE], ids=["documented", "odd", "int-range"]
)
def test_version_priority_is_kubernetes_version_order(expected: list[str]) -> None:
    for shuffled in (expected[::-1], expected[1::2] + expected[::2]):
        assert sorted(shuffled, key=discovery.version_priority) == expected


def test_leading_zeros_are_the_same_version() -> None:
    assert discovery.version_priority("v01") == discovery.version_priority("v1")
    assert discovery.version_priority("v1beta02") == discovery.version_priority("v1beta2")


def brute_force_orders(registry: Registry) -> tuple[list[str], list[str]]:
    """Both group orders computed from scratch from the served types, as kube sorts
    APIServices: one per served group version, built-in priority when a built-in type
    serves it, else the CRD's."""
    services: dict[tuple[str, str], tuple[int, int]] = {}
    for t in registry.all():
        for v in t.versions:
            found = builtin_priority(t.group, v) if t.builtin else None
            if found is not None or (t.group, v) not in services:
                services[(t.group, v)] = found or (1000, 100)
    by_service: list[str] = []
    for (g, _v), _ in sorted(services.items(), key=lambda s: (-s[1][0], f"{s[0][1]}.{s[0][0]}")):
        if g not in by_service:
            by_service.append(g)
    top: dict[str, int] = {}
    for (g, _), (priority, _) in services.items():
        top[g] = max(top.get(g, 0), priority)
    return sorted(top, key=lambda g: (-top[g], g)), by_service


def test_incremental_order_equals_sorting_from_scratch() -> None:
    """Random adds, replacements and removals (built-in and CRD types in shared groups,
    overlapping versions): after each, both cached orders equal a from-scratch sort."""
    import random

    rng = random.Random(24)
    r = Registry()
    install_builtins(r)
    groups = ["a.io", "b.io", "aa.io", "storage.k8s.io", "apps", "x.example.com"]
    versions = ["v1", "v2", "v1beta1", "v1alpha1", "foo", "v10"]
    for step in range(300):
        group = rng.choice(groups)
        resource = f"r{rng.randrange(4)}"
        if rng.random() < 0.3:
            r.remove(group, resource)
        else:
            served = rng.sample(versions, rng.randint(1, 3))
            rtype = ServedResource(
                group=group,
                resource=resource,
                kind="K",
                list_kind="KList",
                singular="k",
                namespaced=True,
                versions=served,
                storage_version=served[0],
                builtin=rng.random() < 0.3,
            )
            r.add(rtype)
        expected_names, expected_by_service = brute_force_orders(r)
        assert r.group_names() == expected_names, step
        assert r.group_names_by_service() == expected_by_service, step
