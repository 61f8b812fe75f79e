"""The default ClusterRoles and ClusterRoleBindings a server starts with.

kube-apiserver reconciles its bootstrap policy at every start
(``plugin/pkg/auth/authorizer/rbac/bootstrappolicy``): each default object carries the
label ``kubernetes.io/bootstrapping: rbac-defaults`` and the annotation
``rbac.authorization.kubernetes.io/autoupdate: "true"``; a missing one is created, an
existing one whose annotation is not ``"false"`` gets back the rules (ClusterRoles) or
subjects (bindings) it lacks — what users added is kept, and a role set to
``autoupdate: "false"`` is left alone.

The roles kept here are the ones users meet: ``cluster-admin``; the aggregated
``admin``, ``edit`` and ``view`` (rules gathered by the aggregation controller from the
ClusterRoles labelled ``rbac.authorization.k8s.io/aggregate-to-{admin,edit,view}``,
among them ``system:aggregate-to-*`` with kube's rules, and ``edit`` aggregating into
``admin``, ``view`` into ``edit``); ``system:discovery``, ``system:basic-user``,
``system:public-info-viewer``, ``system:monitoring``, ``system:auth-delegator`` and
``system:service-account-issuer-discovery``; and the bindings of cluster-admin to
``system:masters``, of the discovery and basic roles to ``system:authenticated``, of
public-info-viewer to every user, of monitoring to ``system:monitoring`` and of the
issuer discovery to every ServiceAccount. The rules are those of kube v1.33's
bootstrap policy (its ``testdata/cluster-roles.yaml``), kept as data.
"""

from __future__ import annotations

from typing import Any

from kubewerk.apiserver.auth.rbac import GROUP
from kubewerk.apiserver.auth.rbac_rules import covers

JSON = dict[str, Any]

AUTOUPDATE = "rbac.authorization.kubernetes.io/autoupdate"
BOOTSTRAP_LABEL = ("kubernetes.io/bootstrapping", "rbac-defaults")
AGGREGATE_TO = "rbac.authorization.k8s.io/aggregate-to-"

READ = ["get", "list", "watch"]
WRITE = ["create", "delete", "deletecollection", "patch", "update"]
READ_WRITE = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


def _rule(groups: list[str], resources: list[str], verbs: list[str]) -> JSON:
    return {"apiGroups": groups, "resources": resources, "verbs": verbs}


def _urls(urls: list[str], verbs: list[str]) -> JSON:
    return {"nonResourceURLs": urls, "verbs": verbs}


def _role(
    name: str,
    rules: list[JSON] | None = None,
    *,
    aggregate_from: str | None = None,
    aggregate_to: str | None = None,
) -> JSON:
    labels = {BOOTSTRAP_LABEL[0]: BOOTSTRAP_LABEL[1]}
    if aggregate_to is not None:
        labels[AGGREGATE_TO + aggregate_to] = "true"
    role: JSON = {
        "apiVersion": f"{GROUP}/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name, "labels": labels, "annotations": {AUTOUPDATE: "true"}},
    }
    if aggregate_from is not None:
        role["aggregationRule"] = {
            "clusterRoleSelectors": [{"matchLabels": {AGGREGATE_TO + aggregate_from: "true"}}]
        }
    if rules is not None:
        role["rules"] = rules
    return role


def _binding(name: str, role: str, subjects: list[tuple[str, str, str]]) -> JSON:
    out: list[JSON] = []
    for kind, subject, namespace in subjects:
        entry: JSON = {"kind": kind, "name": subject}
        if kind == "ServiceAccount":
            entry["namespace"] = namespace
        else:
            entry["apiGroup"] = GROUP
        out.append(entry)
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {
            "name": name,
            "labels": {BOOTSTRAP_LABEL[0]: BOOTSTRAP_LABEL[1]},
            "annotations": {AUTOUPDATE: "true"},
        },
        "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": role},
        "subjects": out,
    }


def cluster_roles() -> list[JSON]:
    """The default ClusterRoles (fresh objects; callers may change them)."""
    core = [""]
    return [
        _role("admin", aggregate_from="admin"),
        _role(
            "cluster-admin",
            [_rule(["*"], ["*"], ["*"]), _urls(["*"], ["*"])],
        ),
        _role("edit", aggregate_from="edit", aggregate_to="admin"),
        _role("view", aggregate_from="view", aggregate_to="edit"),
        _role(
            "system:aggregate-to-admin",
            [
                _rule(["authorization.k8s.io"], ["localsubjectaccessreviews"], ["create"]),
                _rule([GROUP], ["rolebindings", "roles"], READ_WRITE),
            ],
            aggregate_to="admin",
        ),
        _role(
            "system:aggregate-to-edit",
            [
                _rule(
                    core,
                    [
                        "pods/attach",
                        "pods/exec",
                        "pods/portforward",
                        "pods/proxy",
                        "secrets",
                        "services/proxy",
                    ],
                    READ,
                ),
                _rule(core, ["serviceaccounts"], ["impersonate"]),
                _rule(
                    core,
                    ["pods", "pods/attach", "pods/exec", "pods/portforward", "pods/proxy"],
                    WRITE,
                ),
                _rule(core, ["pods/eviction"], ["create"]),
                _rule(
                    core,
                    [
                        "configmaps",
                        "events",
                        "persistentvolumeclaims",
                        "replicationcontrollers",
                        "replicationcontrollers/scale",
                        "secrets",
                        "serviceaccounts",
                        "services",
                        "services/proxy",
                    ],
                    WRITE,
                ),
                _rule(core, ["serviceaccounts/token"], ["create"]),
                _rule(
                    ["apps"],
                    [
                        "daemonsets",
                        "deployments",
                        "deployments/rollback",
                        "deployments/scale",
                        "replicasets",
                        "replicasets/scale",
                        "statefulsets",
                        "statefulsets/scale",
                    ],
                    WRITE,
                ),
                _rule(["autoscaling"], ["horizontalpodautoscalers"], WRITE),
                _rule(["batch"], ["cronjobs", "jobs"], WRITE),
                _rule(
                    ["extensions"],
                    [
                        "daemonsets",
                        "deployments",
                        "deployments/rollback",
                        "deployments/scale",
                        "ingresses",
                        "networkpolicies",
                        "replicasets",
                        "replicasets/scale",
                        "replicationcontrollers/scale",
                    ],
                    WRITE,
                ),
                _rule(["policy"], ["poddisruptionbudgets"], WRITE),
                _rule(["networking.k8s.io"], ["ingresses", "networkpolicies"], WRITE),
                _rule(["coordination.k8s.io"], ["leases"], READ_WRITE),
            ],
            aggregate_to="edit",
        ),
        _role(
            "system:aggregate-to-view",
            [
                _rule(
                    core,
                    [
                        "configmaps",
                        "endpoints",
                        "persistentvolumeclaims",
                        "persistentvolumeclaims/status",
                        "pods",
                        "replicationcontrollers",
                        "replicationcontrollers/scale",
                        "serviceaccounts",
                        "services",
                        "services/status",
                    ],
                    READ,
                ),
                _rule(
                    core,
                    [
                        "bindings",
                        "events",
                        "limitranges",
                        "namespaces/status",
                        "pods/log",
                        "pods/status",
                        "replicationcontrollers/status",
                        "resourcequotas",
                        "resourcequotas/status",
                    ],
                    READ,
                ),
                _rule(core, ["namespaces"], READ),
                _rule(["discovery.k8s.io"], ["endpointslices"], READ),
                _rule(
                    ["apps"],
                    [
                        "controllerrevisions",
                        "daemonsets",
                        "daemonsets/status",
                        "deployments",
                        "deployments/scale",
                        "deployments/status",
                        "replicasets",
                        "replicasets/scale",
                        "replicasets/status",
                        "statefulsets",
                        "statefulsets/scale",
                        "statefulsets/status",
                    ],
                    READ,
                ),
                _rule(
                    ["autoscaling"],
                    ["horizontalpodautoscalers", "horizontalpodautoscalers/status"],
                    READ,
                ),
                _rule(["batch"], ["cronjobs", "cronjobs/status", "jobs", "jobs/status"], READ),
                _rule(
                    ["extensions"],
                    [
                        "daemonsets",
                        "daemonsets/status",
                        "deployments",
                        "deployments/scale",
                        "deployments/status",
                        "ingresses",
                        "ingresses/status",
                        "networkpolicies",
                        "replicasets",
                        "replicasets/scale",
                        "replicasets/status",
                        "replicationcontrollers/scale",
                    ],
                    READ,
                ),
                _rule(["policy"], ["poddisruptionbudgets", "poddisruptionbudgets/status"], READ),
                _rule(
                    ["networking.k8s.io"],
                    ["ingresses", "ingresses/status", "networkpolicies"],
                    READ,
                ),
            ],
            aggregate_to="view",
        ),
        _role(
            "system:auth-delegator",
            [
                _rule(["authentication.k8s.io"], ["tokenreviews"], ["create"]),
                _rule(["authorization.k8s.io"], ["subjectaccessreviews"], ["create"]),
            ],
        ),
        _role(
            "system:basic-user",
            [
                _rule(
                    ["authorization.k8s.io"],
                    ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                    ["create"],
                ),
                _rule(["authentication.k8s.io"], ["selfsubjectreviews"], ["create"]),
            ],
        ),
        _role(
            "system:discovery",
            [
                _urls(
                    [
                        "/api",
                        "/api/*",
                        "/apis",
                        "/apis/*",
                        "/healthz",
                        "/livez",
                        "/openapi",
                        "/openapi/*",
                        "/readyz",
                        "/version",
                        "/version/",
                    ],
                    ["get"],
                )
            ],
        ),
        _role(
            "system:monitoring",
            [
                _urls(
                    [
                        "/healthz",
                        "/healthz/*",
                        "/livez",
                        "/livez/*",
                        "/metrics",
                        "/metrics/slis",
                        "/readyz",
                        "/readyz/*",
                    ],
                    ["get"],
                )
            ],
        ),
        _role(
            "system:public-info-viewer",
            [_urls(["/healthz", "/livez", "/readyz", "/version", "/version/"], ["get"])],
        ),
        _role(
            "system:service-account-issuer-discovery",
            [_urls(["/.well-known/openid-configuration", "/openid/v1/jwks"], ["get"])],
        ),
    ]


def cluster_role_bindings() -> list[JSON]:
    """The default ClusterRoleBindings (fresh objects)."""
    authenticated = ("Group", "system:authenticated", "")
    return [
        _binding("cluster-admin", "cluster-admin", [("Group", "system:masters", "")]),
        _binding("system:basic-user", "system:basic-user", [authenticated]),
        _binding("system:discovery", "system:discovery", [authenticated]),
        _binding("system:monitoring", "system:monitoring", [("Group", "system:monitoring", "")]),
        _binding(
            "system:public-info-viewer",
            "system:public-info-viewer",
            [authenticated, ("Group", "system:unauthenticated", "")],
        ),
        _binding(
            "system:service-account-issuer-discovery",
            "system:service-account-issuer-discovery",
            [("Group", "system:serviceaccounts", "")],
        ),
    ]


def reconciled(default: JSON, current: JSON | None) -> JSON | None:
    """What to write for one default object: ``default`` when ``current`` is None; the
    current object with the missing rules/subjects, labels, annotations and aggregation
    selectors added when it needs them and does not say ``autoupdate: "false"``; None
    when nothing is to be written."""
    if current is None:
        return default
    meta = current.get("metadata") or {}
    annotations = meta.get("annotations") or {}
    if annotations.get(AUTOUPDATE) == "false":
        return None
    changed = False
    out = {**current, "metadata": {**meta}}
    for field in ("labels", "annotations"):
        have = dict(out["metadata"].get(field) or {})
        for key, value in default["metadata"][field].items():
            if key not in have:
                have[key] = value
                changed = True
        out["metadata"][field] = have
    if default["kind"] == "ClusterRole":
        if "aggregationRule" in default:
            wanted = default["aggregationRule"]["clusterRoleSelectors"]
            rule = (
                out.get("aggregationRule") if isinstance(out.get("aggregationRule"), dict) else {}
            )
            assert isinstance(rule, dict)
            have_selectors = list(rule.get("clusterRoleSelectors") or [])
            for selector in wanted:
                if selector not in have_selectors:
                    have_selectors.append(selector)
                    changed = True
            out["aggregationRule"] = {**rule, "clusterRoleSelectors": have_selectors}
        else:
            rules = [r for r in out.get("rules") or [] if isinstance(r, dict)]
            ok, _ = covers(rules, default.get("rules") or [])
            if not ok:
                for rule in default.get("rules") or []:
                    if not covers(rules, [rule])[0]:
                        rules.append(rule)
                out["rules"] = rules
                changed = True
    else:
        subjects = [s for s in out.get("subjects") or [] if isinstance(s, dict)]
        for subject in default["subjects"]:
            if subject not in subjects:
                subjects.append(subject)
                changed = True
        out["subjects"] = subjects
    return out if changed else None
