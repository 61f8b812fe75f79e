"""Tenant constraints: the shipped ValidatingAdmissionPolicy evaluated by the VAP engine
on a matrix of subjects x tenants x environments x paths, Namespaces entering and
leaving tenants, the params ConfigMap, the YAML form and the shipped tenants.yaml."""

from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path as FilePath
from typing import Any

import pytest
import yaml

from kubewerk.schema.admission_policy import (
    ParamStore,
    Request,
    UserInfo,
    admit,
    compile_policy,
    validate_binding,
    validate_policy,
)
from kubewerk.webhook.policy import PolicyDefinitionError
from kubewerk.webhook.policy.tenants import (
    ENVIRONMENT_LABEL,
    SHIPPED_YAML,
    TENANT_LABEL,
    Grant,
    Path,
    Subjects,
    TenantPolicy,
    constraints_from_data,
    shipped_objects,
    tenant_constraints,
)

ARGOCD = "system:serviceaccount:argocd:argocd-application-controller"
DEPLOYER = "system:serviceaccount:ci:deployer"

CONSTRAINTS = """
paths:
  - name: gitops
    subjects: {serviceAccounts: [argocd/argocd-application-controller]}
  - name: kubectl
    fieldManagers: [kubectl, kubectl-client-side-apply]
grants:
  - subjects: {groups: [acme-devs]}
    tenants: [acme]
    environments: [dev, staging]
  - subjects: {users: [alice]}
    tenants: [acme]
    via: [kubectl]
  - subjects: {serviceAccounts: [argocd/argocd-application-controller]}
    environments: [prod]
    via: [gitops]
  - subjects: {groups: [globex-devs]}
    tenants: [globex]
    environments: [dev]
    via: [direct]
  - subjects: {serviceAccounts: [ci/deployer]}
    tenants: [acme]
    environments: [staging]
"""

SUBJECTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "bob": ("bob", ("acme-devs", "system:authenticated")),
    "alice": ("alice", ("system:authenticated",)),
    "argocd": (ARGOCD, ("system:serviceaccounts", "system:serviceaccounts:argocd")),
    "dave": ("dave", ("globex-devs",)),
    "deployer": (DEPLOYER, ("system:serviceaccounts:ci",)),
    "eve": ("eve", ("system:authenticated",)),
    "kcm": ("system:kube-controller-manager", ()),
}
TENANTS = ("acme", "globex")
ENVIRONMENTS = ("dev", "staging", "prod", "")
PATHS = {"direct": None, "kubectl": "kubectl", "helm": "helm"}


def expected(who: str, tenant: str, env: str, path: str) -> bool:
    """The constraints above, read by hand. argocd arrives through gitops whatever its
    field manager; a field manager no path declares (helm) is the direct path."""
    if who == "argocd":
        return env == "prod"  # via gitops, any tenant
    if who == "kcm":
        return True  # the system grant
    via = "kubectl" if path == "kubectl" else "direct"
    if who == "bob":
        return tenant == "acme" and env in ("dev", "staging")
    if who == "alice":
        return tenant == "acme" and via == "kubectl"
    if who == "dave":
        return tenant == "globex" and env == "dev" and via == "direct"
    if who == "deployer":
        return tenant == "acme" and env == "staging"
    return False


@pytest.fixture(scope="module")
def tenants() -> TenantPolicy:
    return constraints_from_data(yaml.safe_load(CONSTRAINTS))


@pytest.fixture(scope="module")
def compiled(tenants: TenantPolicy) -> Any:
    return compile_policy(tenants.to_policy())


def namespace(name: str, tenant: str | None = None, env: str | None = None) -> dict[str, Any]:
    labels = {}
    if tenant:
        labels[TENANT_LABEL] = tenant
    if env:
        labels[ENVIRONMENT_LABEL] = env
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def configmap_request(
    who: str,
    ns: dict[str, Any],
    field_manager: str | None = None,
    operation: str = "CREATE",
) -> Request:
    name, groups = SUBJECTS[who]
    obj = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "app", "namespace": ns["metadata"]["name"]},
    }
    return Request.for_object(
        operation,
        obj if operation != "DELETE" else None,
        obj if operation != "CREATE" else None,
        user=UserInfo(name, groups=groups),
        namespace_object=ns,
        options={"fieldManager": field_manager} if field_manager else None,
    )


def decide(tenants: TenantPolicy, compiled: Any, request: Request, params: bool = True) -> Any:
    _, binding, ns_binding, configmap = tenants.to_objects()
    return admit(
        [compiled],
        [binding, ns_binding],
        request,
        params=ParamStore([configmap] if params else []),
    )


def test_the_objects_are_what_kube_apiserver_accepts(tenants: TenantPolicy) -> None:
    vap, binding, ns_binding, configmap = tenants.to_objects()
    assert validate_policy(vap) == []
    assert validate_binding(binding) == []
    assert validate_binding(ns_binding) == []
    assert configmap["metadata"] == {
        "name": "kubewerk-tenant-constraints",
        "namespace": "kubewerk-system",
    }
    assert configmap["data"]["paths"].splitlines() == [
        "gitops|user:system:serviceaccount:argocd:argocd-application-controller|*",
        "kubectl|*|kubectl",
        "kubectl|*|kubectl-client-side-apply",
    ]
    assert "user:alice|acme|*|kubectl" in configmap["data"]["grants"].splitlines()
    assert "group:system:serviceaccounts:kube-system|*|*|*" in configmap["data"]["grants"]


CASES = list(itertools.product(SUBJECTS, TENANTS, ENVIRONMENTS, PATHS))


@pytest.mark.parametrize(("who", "tenant", "env", "path"), CASES)
def test_matrix(
    tenants: TenantPolicy, compiled: Any, who: str, tenant: str, env: str, path: str
) -> None:
    """7 subjects x 2 tenants x 4 environments (one unlabelled) x 3 paths."""
    ns = namespace("target", tenant, env or None)
    result = decide(tenants, compiled, configmap_request(who, ns, PATHS[path]))
    assert result.allowed is expected(who, tenant, env, path), (
        result.error.message if result.error else "allowed"
    )
    if not result.allowed:
        assert result.error is not None
        assert result.error.code == 403
        assert result.error.reason == "Forbidden"


def test_the_matrix_has_both_answers() -> None:
    answers = {expected(*case) for case in CASES}
    assert answers == {True, False}
    assert len(CASES) == 168


def test_denial_text(tenants: TenantPolicy, compiled: Any) -> None:
    result = decide(
        tenants, compiled, configmap_request("bob", namespace("p", "acme", "prod"), "helm")
    )
    assert result.error is not None
    assert result.error.message == (
        'configmaps "app" is forbidden: ValidatingAdmissionPolicy '
        "'kubewerk-tenant-constraints' with binding 'kubewerk-tenant-constraints' denied "
        'request: user "bob" may not CREATE configmaps in tenant "acme", environment '
        '"prod" via direct: no tenant constraint grants it '
        "(ConfigMap kubewerk-system/kubewerk-tenant-constraints)"
    )
    argocd = configmap_request("argocd", namespace("d", "globex", "dev"), "kubectl")
    denied = decide(tenants, compiled, argocd).error
    assert denied is not None
    assert 'environment "dev" via gitops, kubectl: no tenant' in denied.message


def test_other_operations_and_untenanted_namespaces(tenants: TenantPolicy, compiled: Any) -> None:
    dev = namespace("d", "acme", "dev")
    prod = namespace("p", "acme", "prod")
    for op in ("UPDATE", "DELETE"):
        assert decide(tenants, compiled, configmap_request("bob", dev, operation=op)).allowed
        assert not decide(tenants, compiled, configmap_request("bob", prod, operation=op)).allowed
    free = namespace("scratch")
    for who in SUBJECTS:
        assert decide(tenants, compiled, configmap_request(who, free)).allowed
    # no constraints ConfigMap: everything in a tenanted namespace refused, the rest not
    assert not decide(tenants, compiled, configmap_request("kcm", dev), params=False).allowed
    assert decide(tenants, compiled, configmap_request("eve", free), params=False).allowed


def namespace_request(who: str, new: dict[str, Any] | None, old: dict[str, Any] | None) -> Request:
    name, groups = SUBJECTS[who]
    op = "CREATE" if old is None else "DELETE" if new is None else "UPDATE"
    return Request.for_object(op, new, old, user=UserInfo(name, groups=groups))


@pytest.mark.parametrize(
    ("who", "new", "old", "allowed"),
    [
        ("bob", ("acme", "dev"), None, True),  # create a tenanted namespace he may act in
        ("bob", ("acme", "prod"), None, False),
        ("bob", ("acme", "prod"), ("acme", "dev"), False),  # promote dev to prod
        ("bob", ("globex", "dev"), ("acme", "dev"), False),  # hand it to another tenant
        ("bob", (None, None), ("acme", "prod"), False),  # take prod out of the model
        ("bob", (None, None), ("acme", "dev"), True),
        ("bob", None, ("acme", "prod"), False),  # delete prod
        ("argocd", None, ("acme", "prod"), True),
        ("eve", (None, None), None, True),  # untenanted: not ours
        ("eve", (None, None), (None, None), True),
        ("dave", ("globex", "dev"), ("globex", "dev"), True),
    ],
)
def test_namespaces_entering_and_leaving_tenants(
    tenants: TenantPolicy,
    compiled: Any,
    who: str,
    new: tuple[str | None, str | None] | None,
    old: tuple[str | None, str | None] | None,
    allowed: bool,
) -> None:
    new_obj = None if new is None else namespace("n", *new)
    old_obj = None if old is None else namespace("n", *old)
    result = decide(tenants, compiled, namespace_request(who, new_obj, old_obj))
    assert result.allowed is allowed, result.error.message if result.error else "allowed"


def test_subresources_are_covered(tenants: TenantPolicy, compiled: Any) -> None:
    name, groups = SUBJECTS["eve"]
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "d"}}
    request = Request.for_object(
        "UPDATE",
        pod,
        pod,
        sub_resource="status",
        user=UserInfo(name, groups=groups),
        namespace_object=namespace("d", "acme", "dev"),
    )
    result = decide(tenants, compiled, request)
    assert result.error is not None
    assert "may not UPDATE pods/status in tenant" in result.error.message


def test_shipped_yaml_is_what_the_code_generates() -> None:
    docs = list(yaml.safe_load_all(SHIPPED_YAML.read_text(encoding="utf-8")))
    assert docs == shipped_objects()
    # the fixed objects do not depend on the constraints
    other = tenant_constraints([Grant(Subjects(users=("x",)))])
    assert other.fixed_objects() == shipped_objects()


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"grants": [{"subjects": {"users": ["a"]}, "via": ["gitops"]}]},
            "path 'gitops' is not declared",
        ),
        ({"grants": [{"subjects": {}}]}, "grants[0]: a grant needs at least one subject"),
        ({"grants": [{"subjects": {"user": ["a"]}}]}, "unknown field 'user'"),
        ({"grants": [{"subjects": {"users": ["a|b"]}}]}, "may not contain '|'"),
        ({"grants": [{"subjects": {"serviceAccounts": ["nons"]}}]}, "NAMESPACE/NAME"),
        (
            {"grants": [], "paths": [{"name": "direct", "fieldManagers": ["x"]}]},
            "'direct' is the path",
        ),
        ({"grants": [], "paths": [{"name": "gitops"}]}, "give its subjects, its field managers"),
        (
            {
                "grants": [],
                "paths": [
                    {"name": "a", "fieldManagers": ["x"]},
                    {"name": "a", "fieldManagers": ["y"]},
                ],
            },
            "declared twice",
        ),
        ({"grant": []}, "unknown field 'grant'"),
        ({}, "grants: expected a list"),
    ],
)
def test_yaml_form_errors(data: dict[str, Any], message: str) -> None:
    with pytest.raises(PolicyDefinitionError, match=None) as info:
        constraints_from_data(data)
    assert message in str(info.value)


def test_path_by_identity_and_field_manager_together(compiled: Any) -> None:
    """A path with both: only that identity writing with that field manager."""
    policy = tenant_constraints(
        [Grant(Subjects(users=("alice",)), via=("helm",))],
        [Path("helm", Subjects(users=("alice",)), ("helm",))],
    )
    ns = namespace("d", "acme", "dev")
    _, binding, ns_binding, configmap = policy.to_objects()

    def run(user: str, manager: str | None) -> bool:
        req = Request.for_object(
            "CREATE",
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "d"}},
            user=UserInfo(user),
            namespace_object=ns,
            options={"fieldManager": manager} if manager else {},
        )
        return admit([compiled], [binding, ns_binding], req, params=ParamStore([configmap])).allowed

    assert run("alice", "helm")
    assert not run("alice", "kubectl")
    assert not run("alice", None)
    assert not run("bob", "helm")


def test_kubewerk_gen_policy_writes_the_four_objects(tmp_path: FilePath) -> None:
    (tmp_path / "tenancy.py").write_text(
        "import yaml\n"
        "from kubewerk.webhook.policy.tenants import constraints_from_data\n"
        f"tenants = constraints_from_data(yaml.safe_load({CONSTRAINTS!r}))\n"
    )
    out = tmp_path / "out"
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from kubewerk.cli import main; raise SystemExit(main())",
            "gen",
            "policy",
            "tenancy",
            "-o",
            str(out),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    docs = list(yaml.safe_load_all((out / "kubewerk-tenant-constraints.yaml").read_text()))
    expected = constraints_from_data(yaml.safe_load(CONSTRAINTS)).to_objects()
    assert docs == expected
    assert [d["kind"] for d in docs] == [
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
        "ValidatingAdmissionPolicyBinding",
        "ConfigMap",
    ]
