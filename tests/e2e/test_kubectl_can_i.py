"""``kubectl auth can-i`` with the real kubectl against the embedded server with RBAC on
(HTTPS, token authentication), on a matrix of users, bindings and requests whose
expected answers are written from the Kubernetes RBAC rules and kube's default roles;
then privilege escalation attempts (create, PATCH, through the admission chain's
asynchronous path) refused with kube-apiserver's exact 403 texts, and allowed once the
writer holds ``escalate``/``bind``; and the RBAC Tables kubectl prints."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubewerk.apiserver.server import EmbeddedServer

pytestmark = pytest.mark.e2e

RBAC_API = "rbac.authorization.k8s.io/v1"

SETUP = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
---
apiVersion: v1
kind: Namespace
metadata: {name: team-a}
---
apiVersion: v1
kind: Namespace
metadata: {name: team-b}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: deployer, namespace: team-a}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: alice-edit, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: edit}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}
- {kind: ServiceAccount, name: deployer, namespace: team-a}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: bob-view, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: bob}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: carol-admin, namespace: team-b}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: admin}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: carol}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: app-config-reader, namespace: team-b}
rules:
- {apiGroups: [""], resources: [configmaps], resourceNames: [app-config], verbs: [get]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: dave-app-config, namespace: team-b}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: app-config-reader}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: dave}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: pod-status, namespace: team-a}
rules:
- {apiGroups: [""], resources: [pods/status], verbs: [get, patch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: ops-pod-status, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: pod-status}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: Group, name: ops}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: node-reader}
rules:
- {apiGroups: [""], resources: [nodes], verbs: [get, list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: dave-nodes}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: node-reader}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: dave}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: metrics-reader}
rules:
- {nonResourceURLs: [/metrics, /logs/*], verbs: [get]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: bob-metrics}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: metrics-reader}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: bob}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: widgets-edit
  labels: {rbac.authorization.k8s.io/aggregate-to-edit: "true"}
rules:
- {apiGroups: [example.com], resources: [widgets], verbs: [get, list, create, delete]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: hank-admin, namespace: team-b}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: admin}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: hank}
"""

DEPLOYER = "system:serviceaccount:team-a:deployer"
AS_OPS = ("--as", "eve", "--as-group", "ops")
STATUS = "--subresource=status"

# (arguments after `auth can-i`, expected answer); --as/--as-group impersonate through
# the admin's token (system:masters may impersonate anyone).
MATRIX: list[tuple[tuple[str, ...], bool]] = [
    # alice: ClusterRole edit bound in team-a
    (("create", "deployments.apps", "-n", "team-a", "--as", "alice"), True),
    (("create", "deployments.apps", "-n", "team-b", "--as", "alice"), False),
    (("delete", "pods", "-n", "team-a", "--as", "alice"), True),
    (("get", "secrets", "-n", "team-a", "--as", "alice"), True),  # edit writes secrets
    (("create", "pods", "--subresource=exec", "-n", "team-a", "--as", "alice"), True),
    (("create", "serviceaccounts", "--subresource=token", "-n", "team-a", "--as", "alice"), True),
    (("get", "pods/exec", "-n", "team-a", "--as", "alice"), True),  # TYPE/NAME: a pod "exec"
    (("impersonate", "serviceaccounts", "-n", "team-a", "--as", "alice"), True),
    (("impersonate", "users", "--as", "alice"), False),
    (("create", "rolebindings", "-n", "team-a", "--as", "alice"), False),  # not in edit
    (("get", "roles", "-n", "team-a", "--as", "alice"), False),  # nor in view
    (("create", "resourcequotas", "-n", "team-a", "--as", "alice"), False),
    (("list", "nodes", "--as", "alice"), False),  # cluster-scoped, bound in a namespace
    (("create", "widgets.example.com", "-n", "team-a", "--as", "alice"), True),  # aggregated
    (("update", "widgets.example.com", "-n", "team-a", "--as", "alice"), False),
    (("*", "*", "-n", "team-a", "--as", "alice"), False),
    # bob: view in team-a, /metrics and /logs/* cluster-wide
    (("get", "pods", "-n", "team-a", "--as", "bob"), True),
    (("list", "configmaps", "-n", "team-a", "--as", "bob"), True),
    (("create", "pods", "-n", "team-a", "--as", "bob"), False),
    (("get", "secrets", "-n", "team-a", "--as", "bob"), False),  # view excludes secrets
    (("get", "pods", "--subresource=log", "-n", "team-a", "--as", "bob"), True),
    (("create", "pods", "--subresource=exec", "-n", "team-a", "--as", "bob"), False),
    (("get", "widgets.example.com", "-n", "team-a", "--as", "bob"), False),  # edit only
    (("get", "/metrics", "--as", "bob"), True),
    (("get", "/logs/kube-apiserver.log", "--as", "bob"), True),  # "/logs/*" suffix
    (("post", "/metrics", "--as", "bob"), False),
    (("get", "/metrics", "--as", "alice"), False),
    (("get", "/healthz", "--as", "alice"), True),  # system:public-info-viewer
    (("get", "/api", "--as", "alice"), True),  # system:discovery
    (("get", "/openapi/v3/apis", "--as", "alice"), True),  # "/openapi/*"
    # carol: admin in team-b
    (("create", "rolebindings", "-n", "team-b", "--as", "carol"), True),
    (("create", "roles", "-n", "team-b", "--as", "carol"), True),
    (("get", "resourcequotas", "-n", "team-b", "--as", "carol"), True),
    (("create", "resourcequotas", "-n", "team-b", "--as", "carol"), False),
    (("delete", "namespaces", "--as", "carol"), False),
    (("create", "deployments.apps", "-n", "team-a", "--as", "carol"), False),
    # dave: one ConfigMap by name in team-b, nodes cluster-wide
    (("get", "configmaps/app-config", "-n", "team-b", "--as", "dave"), True),
    (("get", "configmaps/other", "-n", "team-b", "--as", "dave"), False),
    (("get", "configmaps", "-n", "team-b", "--as", "dave"), False),  # no name: not granted
    (("update", "configmaps/app-config", "-n", "team-b", "--as", "dave"), False),
    (("list", "nodes", "--as", "dave"), True),
    (("get", "nodes/node-1", "--as", "dave"), True),
    (("delete", "nodes", "--as", "dave"), False),
    # a group: ops may read and patch pods/status in team-a, not pods
    (("patch", "pods", STATUS, "-n", "team-a", *AS_OPS), True),
    (("get", "pods", STATUS, "-n", "team-a", *AS_OPS), True),
    (("update", "pods", STATUS, "-n", "team-a", *AS_OPS), False),
    (("patch", "pods", "-n", "team-a", *AS_OPS), False),
    (("patch", "pods", STATUS, "-n", "team-a", "--as", "eve"), False),
    # a ServiceAccount, bound by the edit RoleBinding in its namespace
    (("create", "deployments.apps", "-n", "team-a", "--as", DEPLOYER), True),
    (("create", "deployments.apps", "-n", "team-b", "--as", DEPLOYER), False),
    (("get", "pods", "-n", "team-a", "--as", "system:serviceaccount:team-a:other"), False),
    # nobody's bindings: only the default roles of system:authenticated
    (("get", "pods", "--as", "frank"), False),
    (("create", "selfsubjectaccessreviews.authorization.k8s.io", "--as", "frank"), True),
    (("create", "selfsubjectrulesreviews.authorization.k8s.io", "--as", "frank"), True),
    # system:masters
    (("delete", "nodes"), True),
    (("*", "*"), True),
    (("get", "/anything/at/all"), True),
]


def _kubectl(
    kubeconfig: Path, *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    binary = shutil.which("kubectl")
    if binary is None:
        pytest.skip("kubectl is not installed")
    return subprocess.run(
        [binary, f"--cache-dir={kubeconfig.parent / 'cache'}", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "KUBECONFIG": str(kubeconfig)},
        check=False,
    )


@pytest.fixture(scope="module")
def admin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """An admin kubeconfig (token, system:masters) for a TLS server with RBAC on, set up
    with the bindings of ``SETUP`` and the aggregated widgets rule in ``edit``."""
    tmp = tmp_path_factory.mktemp("can-i")
    tokens = tmp / "tokens.csv"
    tokens.write_text('adm,admin,1,"system:masters"\n')
    server = EmbeddedServer(
        tls=True, token_auth_file=tokens, authorizer="RBAC", pki_dir=tmp / "pki"
    ).start_in_thread()
    try:
        kubeconfig = server.write_kubeconfig(tmp / "admin.yaml", token="adm")
        proc = _kubectl(kubeconfig, "apply", "-f", "-", stdin=SETUP)
        assert proc.returncode == 0, proc.stderr
        deadline = time.monotonic() + 10
        _kubectl(kubeconfig, "wait", "--for=condition=Established", "crd/widgets.example.com")
        while (
            "widgets" not in _kubectl(kubeconfig, "get", "clusterrole", "edit", "-o", "yaml").stdout
        ):
            assert time.monotonic() < deadline, "edit never aggregated widgets-edit"
            time.sleep(0.05)
        yield kubeconfig
    finally:
        server.stop_thread()


@pytest.mark.parametrize(("args", "allowed"), MATRIX, ids=[" ".join(a) for a, _ in MATRIX])
def test_can_i_matrix(admin: Path, args: tuple[str, ...], allowed: bool) -> None:
    proc = _kubectl(admin, "auth", "can-i", *args)
    answer = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else proc.stderr
    assert (answer, proc.returncode) == (("yes", 0) if allowed else ("no", 1)), proc.stderr


def test_matrix_size() -> None:
    assert len(MATRIX) >= 40


def _list_rows(admin: Path, *args: str) -> list[list[str]]:
    proc = _kubectl(admin, "auth", "can-i", "--list", *args)
    assert proc.returncode == 0, proc.stderr
    return [line.split() for line in proc.stdout.strip().splitlines()[1:]]


def test_can_i_list(admin: Path) -> None:
    rows = _list_rows(admin, "-n", "team-b", "--as", "dave")
    assert ["configmaps", "[]", "[app-config]", "[get]"] in rows
    assert ["nodes", "[]", "[]", "[get", "list", "watch]"] in rows
    assert ["selfsubjectaccessreviews.authorization.k8s.io", "[]", "[]", "[create]"] in rows
    assert ["[/healthz]", "[]", "[get]"] in rows  # a non-resource row: no first cell
    assert not any(r[0] == "secrets" for r in rows)
    rows = _list_rows(admin, "-n", "team-a", "--as", "alice")
    assert ["widgets.example.com", "[]", "[]", "[get", "list", "create", "delete]"] in rows
    assert any(r[0] == "deployments.apps" for r in rows)
    rows = _list_rows(admin, "--as", "bob")
    assert ["[/logs/*]", "[]", "[get]"] in rows
    assert ["[/metrics]", "[]", "[get]"] in rows
    assert ["*.*", "[]", "[]", "[*]"] in _list_rows(admin)


def _as(
    admin: Path, user: str, *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return _kubectl(admin, "--as", user, *args, stdin=stdin)


def not_held(user: str) -> str:
    return (
        f'user "{user}" (groups=["system:authenticated"]) is attempting to grant RBAC '
        "permissions not currently held:"
    )


NOT_HELD = not_held("carol")


def _role(name: str, rules: str) -> str:
    return f"""apiVersion: {RBAC_API}
kind: Role
metadata: {{name: {name}, namespace: team-b}}
rules:
{rules}
"""


def _binding(name: str, kind: str, role: str) -> str:
    return f"""apiVersion: {RBAC_API}
kind: RoleBinding
metadata: {{name: {name}, namespace: team-b}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: {kind}, name: {role}}}
subjects:
- {{apiGroup: rbac.authorization.k8s.io, kind: User, name: carol}}
"""


NODES_RULE = '- {apiGroups: [""], resources: [nodes], verbs: [get]}\n'
PODS_RULE = '- {apiGroups: [""], resources: [pods], verbs: [get, list]}\n'


def test_escalation_refused_then_allowed_with_escalate_and_bind(admin: Path) -> None:
    # a Role granting what carol (admin in team-b) holds: allowed
    ok = _as(admin, "carol", "create", "-f", "-", stdin=_role("pods-reader", PODS_RULE))
    assert ok.returncode == 0, ok.stderr
    # more than she holds: kube's refusal, one missing rule per line
    denied = _as(admin, "carol", "create", "-f", "-", stdin=_role("nodes-reader", NODES_RULE))
    assert denied.returncode == 1
    assert denied.stderr.strip() == (
        'Error from server (Forbidden): error when creating "STDIN": '
        f'roles.rbac.authorization.k8s.io "nodes-reader" is forbidden: {NOT_HELD}\n'
        '{APIGroups:[""], Resources:["nodes"], Verbs:["get"]}'
    )
    # the same through a PATCH of a Role she may update
    patch = '{"rules":[{"apiGroups":[""],"resources":["nodes"],"verbs":["get"]}]}'
    patched = _as(
        admin, "carol", "patch", "role", "pods-reader", "-n", "team-b", "--type=merge", "-p", patch
    )
    assert patched.returncode == 1
    assert patched.stderr.strip() == (
        'Error from server (Forbidden): roles.rbac.authorization.k8s.io "pods-reader" is '
        f'forbidden: {NOT_HELD}\n{{APIGroups:[""], Resources:["nodes"], Verbs:["get"]}}'
    )
    # binding a ClusterRole she does not hold
    bound = _as(
        admin,
        "carol",
        "create",
        "-f",
        "-",
        stdin=_binding("carol-nodes", "ClusterRole", "node-reader"),
    )
    assert bound.returncode == 1
    assert bound.stderr.strip() == (
        'Error from server (Forbidden): error when creating "STDIN": '
        'rolebindings.rbac.authorization.k8s.io "carol-nodes" is forbidden: '
        f'{NOT_HELD}\n{{APIGroups:[""], Resources:["nodes"], Verbs:["get" "list" "watch"]}}'
    )
    # `bind` on that ClusterRole by name lets her bind it (not hold it)
    grant = f"""apiVersion: {RBAC_API}
kind: ClusterRole
metadata: {{name: carol-binder}}
rules:
- apiGroups: [rbac.authorization.k8s.io]
  resources: [clusterroles]
  resourceNames: [node-reader]
  verbs: [bind]
- {{apiGroups: [rbac.authorization.k8s.io], resources: [roles], verbs: [escalate]}}
---
apiVersion: {RBAC_API}
kind: RoleBinding
metadata: {{name: carol-binder, namespace: team-b}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: carol-binder}}
subjects:
- {{apiGroup: rbac.authorization.k8s.io, kind: User, name: carol}}
"""
    assert _kubectl(admin, "apply", "-f", "-", stdin=grant).returncode == 0
    bound = _as(
        admin,
        "carol",
        "create",
        "-f",
        "-",
        stdin=_binding("carol-nodes", "ClusterRole", "node-reader"),
    )
    assert bound.returncode == 0, bound.stderr
    # still not another ClusterRole
    other = _as(
        admin,
        "carol",
        "create",
        "-f",
        "-",
        stdin=_binding("carol-metrics", "ClusterRole", "metrics-reader"),
    )
    assert other.returncode == 1 and "is attempting to grant RBAC permissions" in other.stderr
    # `escalate` on roles in team-b lets her write a Role with more than she holds
    secrets_all = _role("secrets-all", '- {apiGroups: [""], resources: [secrets], verbs: ["*"]}\n')
    escalated = _as(admin, "carol", "create", "-f", "-", stdin=secrets_all)
    assert escalated.returncode == 0, escalated.stderr


WEBHOOK = """apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: rbac-watch}
webhooks:
- name: rbac.watch.example.com
  admissionReviewVersions: [v1]
  sideEffects: None
  failurePolicy: Ignore
  timeoutSeconds: 1
  clientConfig: {url: "https://127.0.0.1:1/validate"}
  rules:
  - apiGroups: [rbac.authorization.k8s.io]
    apiVersions: [v1]
    operations: [CREATE, UPDATE]
    resources: ["*"]
"""


def test_escalation_refused_through_the_admission_chain(admin: Path) -> None:
    """With a webhook selecting RBAC writes, they take the chain's asynchronous path:
    the escalation check still sees the requesting user (hank: admin in team-b)."""
    assert _kubectl(admin, "apply", "-f", "-", stdin=WEBHOOK).returncode == 0
    try:
        denied = _as(admin, "hank", "create", "-f", "-", stdin=_role("chain-nodes", NODES_RULE))
        assert denied.returncode == 1
        assert denied.stderr.strip() == (
            'Error from server (Forbidden): error when creating "STDIN": '
            'roles.rbac.authorization.k8s.io "chain-nodes" is forbidden: '
            f'{not_held("hank")}\n{{APIGroups:[""], Resources:["nodes"], Verbs:["get"]}}'
        )
        ok = _as(admin, "hank", "create", "-f", "-", stdin=_role("chain-pods", PODS_RULE))
        assert ok.returncode == 0, ok.stderr
        # the allowed write took the asynchronous path: the webhook was called (and
        # failed open); the refused one stopped at the escalation check before it
        metrics = _kubectl(admin, "get", "--raw", "/metrics").stdout
        calls = [
            line
            for line in metrics.splitlines()
            if line.startswith("apiserver_admission_webhook_admission_duration_seconds_count{")
            and 'name="rbac.watch.example.com"' in line
        ]
        assert len(calls) == 1 and calls[0].endswith(" 1.0"), calls
    finally:
        _kubectl(admin, "delete", "validatingwebhookconfiguration", "rbac-watch")


def test_forbidden_text_for_a_request(admin: Path) -> None:
    proc = _as(admin, "bob", "create", "configmap", "x", "-n", "team-a")
    assert proc.returncode == 1
    assert proc.stderr.strip() == (
        'error: failed to create configmap: configmaps is forbidden: User "bob" cannot '
        'create resource "configmaps" in API group "" in the namespace "team-a"'
    )
    proc = _as(admin, "dave", "get", "configmap", "other", "-n", "team-b")
    assert proc.stderr.strip() == (
        'Error from server (Forbidden): configmaps "other" is forbidden: User "dave" cannot '
        'get resource "configmaps" in API group "" in the namespace "team-b"'
    )


def test_rbac_tables(admin: Path) -> None:
    out = _kubectl(admin, "get", "rolebindings", "-n", "team-a", "-o", "wide").stdout
    lines = out.strip().splitlines()
    assert lines[0].split() == ["NAME", "ROLE", "AGE", "USERS", "GROUPS", "SERVICEACCOUNTS"]
    alice = next(line.split() for line in lines if line.startswith("alice-edit"))
    assert alice[1] == "ClusterRole/edit"
    assert alice[3:] == ["alice", "team-a/deployer"]
    out = _kubectl(admin, "get", "clusterroles", "node-reader").stdout
    header, row = out.strip().splitlines()
    assert header.split() == ["NAME", "CREATED", "AT"]
    assert row.split()[0] == "node-reader" and row.split()[1].endswith("Z")
    out = _kubectl(admin, "get", "clusterrolebindings", "dave-nodes").stdout
    header, row = out.strip().splitlines()
    assert header.split() == ["NAME", "ROLE", "AGE"]
    assert row.split()[:2] == ["dave-nodes", "ClusterRole/node-reader"]
