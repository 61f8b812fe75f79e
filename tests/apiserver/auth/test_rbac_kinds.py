"""The RBAC kinds on the REST layer: kube's validation messages, escalation prevention
with kube's refusal texts, the bootstrap policy and ClusterRole aggregation; the access
reviews' answers and errors."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from kubewerk.apiserver.auth.authorizer import RbacChain
from kubewerk.apiserver.auth.rbac_escalation import EscalationGuard
from kubewerk.apiserver.auth.reviews import Reviews
from kubewerk.apiserver.auth.types import CURRENT_USER, AlwaysAllow, UserInfo
from kubewerk.apiserver.builtins import install_builtins
from kubewerk.apiserver.kinds.rbac import RbacServing
from kubewerk.apiserver.registry import Registry
from kubewerk.apiserver.request import Target
from kubewerk.apiserver.rest import ResourceApi
from kubewerk.apiserver.schema_admission import SchemaAdmission
from kubewerk.apiserver.storage.memory import MemoryStore
from kubewerk.core.errors import ApiError

JSON = dict[str, Any]
G = "rbac.authorization.k8s.io"

ALICE = UserInfo("alice", groups=("system:authenticated",))
ROOT = UserInfo("root", groups=("system:masters", "system:authenticated"))


class Server:
    def __init__(self) -> None:
        self.store = MemoryStore()
        self.registry = Registry()
        install_builtins(self.registry)
        self.api = ResourceApi(self.store, self.registry, SchemaAdmission())
        namespaces = self.registry.get("", "namespaces")
        assert namespaces is not None
        for ns in ("default", "team", "other", "x"):
            body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
            self.api.create(Target(namespaces, "v1", None), body, {})
        self.rbac = RbacServing(self.store, self.registry, self.api)
        self.rbac.install()
        self.chain = RbacChain(self.store)
        self.rbac.attach(EscalationGuard(self.chain, self.chain.rbac))

    def create(self, resource: str, obj: JSON, ns: str | None = None, as_: UserInfo = ROOT) -> JSON:
        rtype = self.registry.get(G, resource)
        assert rtype is not None
        token = CURRENT_USER.set(as_)
        try:
            return self.api.create(Target(rtype, "v1", ns), obj, {}).body
        finally:
            CURRENT_USER.reset(token)

    def update(self, resource: str, obj: JSON, ns: str | None = None, as_: UserInfo = ROOT) -> JSON:
        rtype = self.registry.get(G, resource)
        assert rtype is not None
        token = CURRENT_USER.set(as_)
        try:
            target = Target(rtype, "v1", ns, obj["metadata"]["name"])
            return self.api.update(target, obj, {}).body
        finally:
            CURRENT_USER.reset(token)

    def get(self, resource: str, name: str, ns: str = "") -> JSON | None:
        return self.store.get(f"/{G}/{resource}/{ns}/{name}")


@pytest.fixture
def server() -> Iterator[Server]:
    yield Server()


def rule(groups: list[str], resources: list[str], verbs: list[str]) -> JSON:
    return {"apiGroups": groups, "resources": resources, "verbs": verbs}


def role(name: str, *rules: JSON, kind: str = "Role") -> JSON:
    return {"apiVersion": f"{G}/v1", "kind": kind, "metadata": {"name": name}, "rules": list(rules)}


def rb(name: str, kind: str, ref: str, *subjects: JSON, cluster: bool = False) -> JSON:
    return {
        "apiVersion": f"{G}/v1",
        "kind": "ClusterRoleBinding" if cluster else "RoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": G, "kind": kind, "name": ref},
        "subjects": list(subjects),
    }


def user(name: str) -> JSON:
    return {"kind": "User", "apiGroup": G, "name": name}


def refusal(server: Server, resource: str, obj: JSON, ns: str | None, as_: UserInfo) -> ApiError:
    with pytest.raises(ApiError) as info:
        server.create(resource, obj, ns, as_)
    return info.value


# -- bootstrap and aggregation ------------------------------------------------------


def test_bootstrap_policy(server: Server) -> None:
    admin = server.get("clusterroles", "cluster-admin")
    assert admin is not None
    assert admin["metadata"]["annotations"] == {
        "rbac.authorization.kubernetes.io/autoupdate": "true"
    }
    assert admin["metadata"]["labels"] == {"kubernetes.io/bootstrapping": "rbac-defaults"}
    binding = server.get("clusterrolebindings", "cluster-admin")
    assert binding is not None
    assert binding["subjects"] == [{"kind": "Group", "name": "system:masters", "apiGroup": G}]
    basic = server.get("clusterrolebindings", "system:basic-user")
    assert basic is not None and basic["subjects"][0]["name"] == "system:authenticated"


def test_aggregated_roles_gather_labelled_rules(server: Server) -> None:
    view = server.get("clusterroles", "view")
    edit = server.get("clusterroles", "edit")
    admin = server.get("clusterroles", "admin")
    assert view is not None and edit is not None and admin is not None
    assert rule([""], ["namespaces"], ["get", "list", "watch"]) in view["rules"]
    # view aggregates into edit, edit into admin
    assert all(r in edit["rules"] for r in view["rules"])
    assert all(r in admin["rules"] for r in edit["rules"])
    assert not any("secrets" in r.get("resources", []) for r in view["rules"])
    # a new labelled role is gathered at once, up the chain
    extra = role("crd-view", rule(["example.com"], ["widgets"], ["get"]), kind="ClusterRole")
    extra["metadata"]["labels"] = {"rbac.authorization.k8s.io/aggregate-to-view": "true"}
    server.create("clusterroles", extra)
    for name in ("view", "edit", "admin"):
        got = server.get("clusterroles", name)
        assert got is not None
        assert rule(["example.com"], ["widgets"], ["get"]) in got["rules"], name


def test_bootstrap_reconciles_missing_rules_and_keeps_autoupdate_false(server: Server) -> None:
    basic = server.get("clusterroles", "system:basic-user")
    assert basic is not None
    stripped = {**basic, "rules": [], "metadata": {**basic["metadata"]}}
    server.store.update("/" + G + "/clusterroles//system:basic-user", stripped)
    frozen = server.get("clusterroles", "system:discovery")
    assert frozen is not None
    meta = {
        **frozen["metadata"],
        "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "false"},
    }
    server.store.update(
        "/" + G + "/clusterroles//system:discovery", {**frozen, "metadata": meta, "rules": []}
    )
    server.rbac.bootstrap()
    again = server.get("clusterroles", "system:basic-user")
    assert again is not None and len(again["rules"]) == 2
    kept = server.get("clusterroles", "system:discovery")
    assert kept is not None and kept["rules"] == []


# -- validation -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("resource", "obj", "ns", "message"),
    [
        (
            "roles",
            role("r", {"apiGroups": [""], "resources": ["pods"]}),
            "default",
            'Role.rbac.authorization.k8s.io "r" is invalid: rules[0].verbs: Required value: '
            "verbs must contain at least one value",
        ),
        (
            "roles",
            role("r", {"nonResourceURLs": ["/x"], "verbs": ["get"]}),
            "default",
            'Role.rbac.authorization.k8s.io "r" is invalid: rules[0].nonResourceURLs: Invalid '
            'value: ["/x"]: namespaced rules cannot apply to non-resource URLs',
        ),
        (
            "clusterroles",
            role("c", {"verbs": ["get"], "resources": ["pods"]}, kind="ClusterRole"),
            None,
            'ClusterRole.rbac.authorization.k8s.io "c" is invalid: rules[0].apiGroups: Required '
            "value: resource rules must supply at least one api group",
        ),
        (
            "clusterroles",
            role(
                "c",
                {
                    "verbs": ["get"],
                    "apiGroups": [""],
                    "resources": ["a", "b"],
                    "resourceNames": ["n"],
                },
                kind="ClusterRole",
            ),
            None,
            'ClusterRole.rbac.authorization.k8s.io "c" is invalid: rules[0].resourceNames: '
            "Required value: resource names cannot apply to multiple resources",
        ),
        (
            "clusterrolebindings",
            rb("b", "Role", "x", user("u"), cluster=True),
            None,
            'ClusterRoleBinding.rbac.authorization.k8s.io "b" is invalid: roleRef.kind: '
            'Unsupported value: "Role": supported values: "ClusterRole"',
        ),
        (
            "rolebindings",
            rb("b", "ClusterRole", "view", {"kind": "Robot", "name": "r"}),
            "default",
            'RoleBinding.rbac.authorization.k8s.io "b" is invalid: subjects[0].kind: Unsupported '
            'value: "Robot": supported values: "ServiceAccount", "User", "Group"',
        ),
        (
            "clusterrolebindings",
            rb("b", "ClusterRole", "view", {"kind": "ServiceAccount", "name": "r"}, cluster=True),
            None,
            'ClusterRoleBinding.rbac.authorization.k8s.io "b" is invalid: subjects[0].namespace: '
            "Required value",
        ),
        (
            "rolebindings",
            rb("b", "ClusterRole", "view", {"kind": "User", "name": "u", "apiGroup": "x.io"}),
            "default",  # an empty apiGroup is defaulted (SetDefaults_Subject)
            'RoleBinding.rbac.authorization.k8s.io "b" is invalid: subjects[0].apiGroup: '
            'Unsupported value: "x.io": supported values: "rbac.authorization.k8s.io"',
        ),
        (
            "roles",
            role("a/b", rule([""], ["pods"], ["get"])),
            "default",
            'Role.rbac.authorization.k8s.io "a/b" is invalid: metadata.name: Invalid value: '
            "\"a/b\": may not contain '/'",
        ),
    ],
)
def test_validation_messages(
    server: Server, resource: str, obj: JSON, ns: str | None, message: str
) -> None:
    with pytest.raises(ApiError) as info:
        server.create(resource, obj, ns)
    assert info.value.code == 422
    assert info.value.message == message


def test_role_ref_is_immutable(server: Server) -> None:
    created = server.create("rolebindings", rb("b", "ClusterRole", "view", user("u")), "default")
    changed = {**created, "roleRef": {"apiGroup": G, "kind": "ClusterRole", "name": "edit"}}
    with pytest.raises(ApiError) as info:
        server.update("rolebindings", changed, "default")
    assert info.value.message == (
        'RoleBinding.rbac.authorization.k8s.io "b" is invalid: roleRef: Invalid value: '
        '{"APIGroup":"rbac.authorization.k8s.io","Kind":"ClusterRole","Name":"edit"}: '
        "cannot change roleRef"
    )


# -- escalation -------------------------------------------------------------------


def grant(server: Server, name: str, *rules: JSON, ns: str = "team") -> None:
    server.create("roles", role(name, *rules), ns)
    server.create("rolebindings", rb(name, "Role", name, user("alice")), ns)


def test_role_escalation_refused_with_kube_text(server: Server) -> None:
    grant(server, "pods", rule([""], ["pods"], ["get", "list"]))
    ok = role("sub", rule([""], ["pods"], ["get"]))
    server.create("roles", ok, "team", ALICE)  # a subset of what alice holds
    err = refusal(
        server,
        "roles",
        role("more", rule([""], ["pods", "secrets"], ["get", "delete"])),
        "team",
        ALICE,
    )
    assert err.code == 403
    assert err.message == (
        'roles.rbac.authorization.k8s.io "more" is forbidden: user "alice" '
        '(groups=["system:authenticated"]) is attempting to grant RBAC permissions not '
        "currently held:\n"
        '{APIGroups:[""], Resources:["pods"], Verbs:["delete"]}\n'
        '{APIGroups:[""], Resources:["secrets"], Verbs:["get" "delete"]}'
    )
    # not in another namespace either
    assert (
        refusal(server, "roles", role("sub", rule([""], ["pods"], ["get"])), "x", ALICE).code == 403
    )


def test_escalate_verb_lets_through(server: Server) -> None:
    grant(server, "esc", rule([G], ["roles"], ["escalate"]))
    server.create("roles", role("any", rule(["*"], ["*"], ["*"])), "team", ALICE)


def test_binding_needs_held_rules_or_bind(server: Server) -> None:
    grant(server, "reader", rule([""], ["configmaps"], ["get"]))
    server.create("roles", role("cm", rule([""], ["configmaps"], ["get"])), "team")
    server.create("roles", role("secrets", rule([""], ["secrets"], ["get"])), "team")
    server.create("rolebindings", rb("ok", "Role", "cm", user("bob")), "team", ALICE)
    err = refusal(server, "rolebindings", rb("no", "Role", "secrets", user("bob")), "team", ALICE)
    assert err.code == 403
    assert err.message.startswith(
        'rolebindings.rbac.authorization.k8s.io "no" is forbidden: user "alice" '
        '(groups=["system:authenticated"]) is attempting to grant RBAC permissions'
    )
    assert err.message.endswith('\n{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}')
    missing = refusal(server, "rolebindings", rb("m", "Role", "nope", user("bob")), "team", ALICE)
    assert (missing.code, missing.message) == (
        404,
        'roles.rbac.authorization.k8s.io "nope" not found',
    )
    # bind on that role by name lets alice bind it without holding it
    server.create(
        "roles",
        role(
            "binder",
            {
                "apiGroups": [G],
                "resources": ["roles"],
                "verbs": ["bind"],
                "resourceNames": ["secrets"],
            },
        ),
        "team",
    )
    server.create("rolebindings", rb("binder", "Role", "binder", user("alice")), "team")
    server.create("rolebindings", rb("yes", "Role", "secrets", user("bob")), "team", ALICE)


def test_aggregation_rule_needs_cluster_admin(server: Server) -> None:
    server.create(
        "clusterroles", role("esc", rule([G], ["clusterroles"], ["escalate"]), kind="ClusterRole")
    )
    agg = role("agg", kind="ClusterRole")
    agg["aggregationRule"] = {"clusterRoleSelectors": [{"matchLabels": {"a": "b"}}]}
    err = refusal(server, "clusterroles", agg, None, ALICE)
    assert err.message == (
        'clusterroles.rbac.authorization.k8s.io "agg" is forbidden: must have cluster-admin '
        "privileges to use the aggregationRule"
    )


# -- reviews ----------------------------------------------------------------------


def test_reviews(server: Server) -> None:
    grant(server, "pods", rule([""], ["pods"], ["get"]))
    reviews = Reviews(server.chain)
    spec = {"resourceAttributes": {"namespace": "team", "verb": "get", "resource": "pods"}}
    answer = reviews.create("selfsubjectaccessreviews", None, {"spec": spec}, ALICE)
    assert answer["status"] == {
        "allowed": True,
        "reason": 'RBAC: allowed by RoleBinding "pods/team" of Role "pods" to User "alice"',
    }
    assert answer["kind"] == "SelfSubjectAccessReview"
    sar = {"spec": {**spec, "user": "bob"}}
    assert reviews.create("subjectaccessreviews", None, sar)["status"] == {"allowed": False}
    local = reviews.create("localsubjectaccessreviews", "team", {"spec": {**spec, "user": "alice"}})
    assert local["status"]["allowed"] is True
    with pytest.raises(ApiError) as info:
        reviews.create("localsubjectaccessreviews", "other", {"spec": {**spec, "user": "alice"}})
    assert info.value.message == (
        'LocalSubjectAccessReview.authorization.k8s.io "" is invalid: '
        'spec.resourceAttributes.namespace: Invalid value: "team": must match metadata.namespace'
    )
    with pytest.raises(ApiError) as info:
        reviews.create("subjectaccessreviews", None, {"spec": spec})
    assert info.value.message.endswith(
        'spec.user: Invalid value: "": at least one of user or group must be specified'
    )
    with pytest.raises(ApiError) as info:
        reviews.create("selfsubjectaccessreviews", None, {"spec": {}}, ALICE)
    assert "exactly one of nonResourceAttributes or resourceAttributes must be specified" in (
        info.value.message
    )
    rules = reviews.create("selfsubjectrulesreviews", None, {"spec": {"namespace": "team"}}, ALICE)
    assert {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]} in rules["status"][
        "resourceRules"
    ]
    assert {
        "verbs": ["create"],
        "apiGroups": ["authorization.k8s.io"],
        "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
    } in rules["status"]["resourceRules"]
    assert rules["status"]["incomplete"] is False


def test_reviews_with_authorization_off() -> None:
    reviews = Reviews(AlwaysAllow())
    spec = {"nonResourceAttributes": {"verb": "get", "path": "/anything"}}
    assert reviews.create("selfsubjectaccessreviews", None, {"spec": spec}, ALICE)["status"] == {
        "allowed": True
    }
    rules = reviews.create("selfsubjectrulesreviews", None, {"spec": {"namespace": "x"}}, ALICE)
    assert rules["status"]["resourceRules"] == [
        {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}
    ]
