"""The RBAC authorizer over stored Roles and bindings: rule matching, subjects, the reason
texts kube gives, the system:masters chain, rule listing, and cache invalidation."""

from __future__ import annotations

from typing import Any

import pytest

from kubewerk.apiserver.auth.authorizer import rbac_authorizer, rules_review
from kubewerk.apiserver.auth.rbac import RbacAuthorizer
from kubewerk.apiserver.auth.rbac_rules import CompiledRule
from kubewerk.apiserver.auth.types import AlwaysAllow, Attributes, Decision, UserInfo
from kubewerk.apiserver.storage.memory import MemoryStore

JSON = dict[str, Any]
G = "rbac.authorization.k8s.io"

ALICE = UserInfo("alice", groups=("dev", "system:authenticated"))
BOB = UserInfo("bob", groups=("system:authenticated",))
SA = UserInfo(
    "system:serviceaccount:team:robot",
    groups=("system:serviceaccounts", "system:serviceaccounts:team", "system:authenticated"),
)
ROOT = UserInfo("root", groups=("system:masters",))


def role(ns: str, name: str, *rules: JSON) -> tuple[str, JSON]:
    return f"/{G}/roles/{ns}/{name}", {
        "metadata": {"name": name, "namespace": ns},
        "rules": list(rules),
    }


def cluster_role(name: str, *rules: JSON) -> tuple[str, JSON]:
    return f"/{G}/clusterroles//{name}", {"metadata": {"name": name}, "rules": list(rules)}


def binding(ns: str, name: str, kind: str, ref: str, *subjects: JSON) -> tuple[str, JSON]:
    return f"/{G}/rolebindings/{ns}/{name}", {
        "metadata": {"name": name, "namespace": ns},
        "roleRef": {"apiGroup": G, "kind": kind, "name": ref},
        "subjects": list(subjects),
    }


def cluster_binding(name: str, ref: str, *subjects: JSON) -> tuple[str, JSON]:
    return f"/{G}/clusterrolebindings//{name}", {
        "metadata": {"name": name},
        "roleRef": {"apiGroup": G, "kind": "ClusterRole", "name": ref},
        "subjects": list(subjects),
    }


def user(name: str) -> JSON:
    return {"kind": "User", "apiGroup": G, "name": name}


def group(name: str) -> JSON:
    return {"kind": "Group", "apiGroup": G, "name": name}


def sa(name: str, ns: str = "") -> JSON:
    out = {"kind": "ServiceAccount", "name": name}
    if ns:
        out["namespace"] = ns
    return out


def rule(groups: list[str], resources: list[str], verbs: list[str], **extra: Any) -> JSON:
    return {"apiGroups": groups, "resources": resources, "verbs": verbs, **extra}


@pytest.fixture
def store() -> MemoryStore:
    s = MemoryStore()
    for key, obj in (
        cluster_role("pod-reader", rule([""], ["pods", "pods/log"], ["get", "list", "watch"])),
        cluster_role("scaler", rule(["apps"], ["*/scale"], ["update"])),
        cluster_role(
            "one-cm", rule([""], ["configmaps"], ["get", "update"], resourceNames=["app"])
        ),
        cluster_role("metrics", {"nonResourceURLs": ["/metrics", "/logs/*"], "verbs": ["get"]}),
        cluster_role("all", rule(["*"], ["*"], ["*"])),
        role("team", "deployer", rule(["apps"], ["deployments"], ["*"])),
        cluster_binding("alice-pods", "pod-reader", user("alice")),
        cluster_binding("devs-metrics", "metrics", group("dev")),
        binding("team", "robot-deploy", "Role", "deployer", sa("robot")),
        binding("team", "bob-scale", "ClusterRole", "scaler", user("bob")),
        binding("team", "bob-cm", "ClusterRole", "one-cm", user("bob")),
        binding("other", "robot-all", "ClusterRole", "all", sa("robot", "team")),
    ):
        s.create(key, obj)
    return s


def res(
    u: UserInfo, verb: str, resource: str, ns: str = "", group: str = "", **kw: Any
) -> Attributes:
    return Attributes(u, verb, namespace=ns, api_group=group, resource=resource, **kw)


def url(u: UserInfo, path: str, verb: str = "get") -> Attributes:
    return Attributes(u, verb, path=path, resource_request=False)


CASES: list[tuple[str, Attributes, bool]] = [
    ("cluster binding, any namespace", res(ALICE, "list", "pods", "x"), True),
    ("cluster binding, cluster-wide", res(ALICE, "watch", "pods"), True),
    ("verb not granted", res(ALICE, "delete", "pods", "x"), False),
    ("other group", res(ALICE, "get", "pods", "x", group="apps"), False),
    ("subresource exact", res(ALICE, "get", "pods", "x", subresource="log", name="p"), True),
    (
        "subresource not granted",
        res(ALICE, "get", "pods", "x", subresource="exec", name="p"),
        False,
    ),
    (
        "*/scale in a namespace",
        res(BOB, "update", "deployments", "team", "apps", subresource="scale", name="d"),
        True,
    ),
    (
        "*/scale not the main resource",
        res(BOB, "update", "deployments", "team", "apps", name="d"),
        False,
    ),
    (
        "role binding only in its namespace",
        res(BOB, "update", "deployments", "x", "apps", subresource="scale", name="d"),
        False,
    ),
    ("resourceNames match", res(BOB, "get", "configmaps", "team", name="app"), True),
    ("resourceNames other name", res(BOB, "get", "configmaps", "team", name="db"), False),
    ("resourceNames never list", res(BOB, "list", "configmaps", "team"), False),
    ("non-resource exact", url(ALICE, "/metrics"), True),
    ("non-resource prefix", url(ALICE, "/logs/kube/x"), True),
    ("non-resource prefix needs the slash", url(ALICE, "/logs"), False),
    ("non-resource verb", url(ALICE, "/metrics", "post"), False),
    (
        "SA subject defaults to the binding namespace",
        res(SA, "create", "deployments", "team", "apps"),
        True,
    ),
    ("SA with namespace in another namespace", res(SA, "delete", "secrets", "other"), True),
    ("SA nothing cluster-wide", res(SA, "list", "secrets"), False),
    ("nobody", res(UserInfo("eve"), "get", "pods", "x"), False),
]


@pytest.mark.parametrize(("label", "attrs", "allowed"), CASES, ids=[c[0] for c in CASES])
def test_decisions(store: MemoryStore, label: str, attrs: Attributes, allowed: bool) -> None:
    assert RbacAuthorizer(store).authorize(attrs).allowed is allowed


def test_reasons_name_the_binding(store: MemoryStore) -> None:
    authz = RbacAuthorizer(store)
    assert authz.authorize(res(ALICE, "get", "pods", "x")) == Decision(
        True,
        'RBAC: allowed by ClusterRoleBinding "alice-pods" of ClusterRole "pod-reader" '
        'to User "alice"',
    )
    assert authz.authorize(res(SA, "get", "deployments", "team", "apps")) == Decision(
        True,
        'RBAC: allowed by RoleBinding "robot-deploy/team" of Role "deployer" to '
        'ServiceAccount "robot/team"',
    )
    assert authz.authorize(url(ALICE, "/metrics")).reason == (
        'RBAC: allowed by ClusterRoleBinding "devs-metrics" of ClusterRole "metrics" to Group "dev"'
    )
    assert authz.authorize(res(ALICE, "delete", "pods", "x")) == Decision(False, "")


def test_missing_role_is_the_deny_reason(store: MemoryStore) -> None:
    key, obj = cluster_binding("dangling", "nope", user("alice"))
    store.create(key, obj)
    key, obj = binding("x", "dangling2", "Role", "gone", user("alice"))
    store.create(key, obj)
    authz = RbacAuthorizer(store)
    assert authz.authorize(res(ALICE, "delete", "pods")).reason == (
        'RBAC: clusterrole.rbac.authorization.k8s.io "nope" not found'
    )
    assert authz.authorize(res(ALICE, "delete", "pods", "x")).reason == (
        'RBAC: [clusterrole.rbac.authorization.k8s.io "nope" not found, '
        'role.rbac.authorization.k8s.io "gone" not found]'
    )
    # other rules still allow
    assert authz.authorize(res(ALICE, "get", "pods", "x")).allowed


def test_changes_are_seen_at_once(store: MemoryStore) -> None:
    authz = RbacAuthorizer(store)
    attrs = res(ALICE, "delete", "pods", "x")
    assert not authz.authorize(attrs).allowed
    key, obj = cluster_binding("alice-all", "all", user("alice"))
    store.create(key, obj)
    assert authz.authorize(attrs).allowed
    store.delete(key)
    assert not authz.authorize(attrs).allowed
    key, obj = cluster_role("pod-reader", rule([""], ["pods"], ["delete"]))
    stored = store.get(key)
    assert stored is not None
    store.update(key, obj)
    assert authz.authorize(attrs).allowed
    assert not authz.authorize(res(ALICE, "get", "pods", "x")).allowed


def test_masters_first_then_rbac(store: MemoryStore) -> None:
    chain = rbac_authorizer(store)
    assert chain.authorize(res(ROOT, "delete", "nodes")) == Decision(True, "")
    assert chain.authorize(res(ALICE, "get", "pods", "x")).reason.startswith("RBAC: allowed by")
    assert chain.authorize(res(BOB, "delete", "nodes")) == Decision(False, "")
    # rules are RBAC's only: a master lists nothing without a binding
    assert chain.rules_for(ROOT, "default") == ([], [], False)


def test_rules_review_lists_cluster_then_namespace_rules(store: MemoryStore) -> None:
    resource_rules, non_resource, incomplete, error = rules_review(
        rbac_authorizer(store), BOB, "team"
    )
    # bindings in name order: bob-cm, then bob-scale
    assert resource_rules == [
        {
            "verbs": ["get", "update"],
            "apiGroups": [""],
            "resources": ["configmaps"],
            "resourceNames": ["app"],
        },
        {"verbs": ["update"], "apiGroups": ["apps"], "resources": ["*/scale"]},
    ]
    assert (non_resource, incomplete, error) == ([], False, "")
    _, non_resource, _, _ = rules_review(rbac_authorizer(store), ALICE, "team")
    assert non_resource == [{"verbs": ["get"], "nonResourceURLs": ["/metrics", "/logs/*"]}]


def test_always_allow_lists_wildcards() -> None:
    assert rules_review(AlwaysAllow(), BOB, "default") == (
        [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
        [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
        False,
        "",
    )


def test_compiled_rule_edge_cases() -> None:
    star_sub = CompiledRule(rule(["*"], ["*/status"], ["get"]))
    assert star_sub.allows(res(BOB, "get", "pods", subresource="status"))
    assert not star_sub.allows(res(BOB, "get", "pods"))
    assert not star_sub.allows(res(BOB, "get", "pods", subresource="statusx"))
    everything_url = CompiledRule({"nonResourceURLs": ["*"], "verbs": ["*"]})
    assert everything_url.allows(url(BOB, "/anything", "delete"))
    assert not everything_url.allows(res(BOB, "get", "pods"))
    malformed = CompiledRule({"verbs": "get", "resources": [1, "pods"], "apiGroups": [""]})
    assert not malformed.allows(res(BOB, "get", "pods"))
