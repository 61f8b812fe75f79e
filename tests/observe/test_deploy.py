"""``kubewerk gen deploy``: stable output that ``kubewerk lint`` passes, accepted by the
embedded server, and RBAC that suffices for the operator running as its
ServiceAccount (the platform example and the runtime's example operator)."""

from __future__ import annotations

import contextlib
import importlib
import io
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubewerk.cli import main as cli_main
from kubewerk.client.client import Client
from kubewerk.testing import install_crds, wait_for

ROOT = Path(__file__).resolve().parents[2]


def kubewerk(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli_main(list(args))
    return code, out.getvalue(), err.getvalue()


def generate(directory: Path, target: str, *extra: str) -> dict[str, bytes]:
    code, _, err = kubewerk(
        "gen", "deploy", target, "--image", "ghcr.io/example/op:1.0", "-o", str(directory), *extra
    )
    assert code == 0, err
    return {
        p.relative_to(directory).as_posix(): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


def manifests(directory: Path) -> list[dict[str, Any]]:
    """Every object, in the kustomization's order."""
    kustomization = yaml.safe_load((directory / "kustomization.yaml").read_text())
    docs: list[dict[str, Any]] = []
    for rel in kustomization["resources"]:
        docs.extend(d for d in yaml.safe_load_all((directory / rel).read_text()) if d)
    return docs


def stand_in_crd(group: str, kind: str, plural: str) -> dict[str, Any]:
    """The CRD an operator installs (Prometheus Operator, cert-manager), schema-less."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "names": {"kind": kind, "plural": plural, "singular": kind.lower()},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                }
            ],
        },
    }


STAND_INS = [
    stand_in_crd("monitoring.coreos.com", "ServiceMonitor", "servicemonitors"),
    stand_in_crd("cert-manager.io", "Issuer", "issuers"),
    stand_in_crd("cert-manager.io", "Certificate", "certificates"),
]


async def apply_all(client: Client, docs: list[dict[str, Any]]) -> None:
    """Create every object in order as ``kubectl apply -k`` would (CRDs established
    before their objects)."""
    await install_crds(client, *STAND_INS)
    crds = [d for d in docs if d["kind"] == "CustomResourceDefinition"]
    if crds:
        await install_crds(client, *crds)
    for doc in docs:
        if doc["kind"] != "CustomResourceDefinition":
            await client.create(doc)


def by_kind(docs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [d for d in docs if d["kind"] == kind]


@pytest.mark.kubewerk_rbac  # a server that serves the RBAC kinds, as a cluster does
async def test_the_platform_example(tmp_path: Path, kube_client: Client) -> None:
    first = generate(tmp_path / "a", "examples.platform_demo:platform", "--replicas", "2")
    again = generate(tmp_path / "a", "examples.platform_demo:platform", "--replicas", "2")
    elsewhere = generate(tmp_path / "b", "examples.platform_demo:platform", "--replicas", "2")
    assert first == again == elsewhere  # same input, same bytes
    # the CRDs are the example's own
    for crd in sorted((ROOT / "examples/platform_demo/crds").glob("*.yaml")):
        assert first[f"crd/{crd.name}"] == crd.read_bytes()
    code, out, _ = kubewerk("lint", str(tmp_path / "a"))
    assert code == 0, out
    docs = manifests(tmp_path / "a")
    (deployment,) = by_kind(docs, "Deployment")
    assert deployment["metadata"]["namespace"] == "platform-example-system"
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["args"] == [
        "run",
        "examples.platform_demo:platform",
        "--probe-address",
        ":8081",
        "--leader-elect",
        "--leader-election-id",
        "platform-example",
    ]
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": 8081}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": 8081}
    assert pod["terminationGracePeriodSeconds"] == 40  # 30 s graceful shutdown + margin
    assert pod["serviceAccountName"] == "platform-example"
    # replicas > 1: leader election, and the Lease in the operator's namespace
    (role,) = by_kind(docs, "Role")
    assert role["metadata"]["namespace"] == "platform-example-system"
    assert {r["resources"][0] for r in role["rules"]} == {"leases"}
    (monitor,) = by_kind(docs, "ServiceMonitor")
    services = {s["metadata"]["name"]: s for s in by_kind(docs, "Service")}
    metrics = services["platform-example-metrics"]
    assert (
        monitor["spec"]["selector"]["matchLabels"].items() <= metrics["metadata"]["labels"].items()
    )
    assert metrics["spec"]["selector"].items() <= pod_labels(deployment).items()
    assert not by_kind(docs, "ValidatingWebhookConfiguration")
    await apply_all(kube_client, docs)
    stored = await kube_client.get(
        _rt("apps", "v1", "Deployment", "deployments"),
        "platform-example",
        "platform-example-system",
    )
    assert stored["spec"]["replicas"] == 2


def pod_labels(deployment: dict[str, Any]) -> dict[str, str]:
    labels: dict[str, str] = deployment["spec"]["template"]["metadata"]["labels"]
    return labels


def _rt(group: str, version: str, kind: str, plural: str, namespaced: bool = True) -> Any:
    from kubewerk.client import ResourceType

    return ResourceType(group, version, kind, plural, namespaced)


@pytest.mark.kubewerk_rbac
async def test_webhooks_and_their_certificate(tmp_path: Path, kube_client: Client) -> None:
    generate(tmp_path / "cm", "tests.observe.deploy_webhook_operator:manager")
    docs = manifests(tmp_path / "cm")
    inject = "widget-operator-system/widget-operator-serving-cert"
    (validating,) = by_kind(docs, "ValidatingWebhookConfiguration")
    (mutating,) = by_kind(docs, "MutatingWebhookConfiguration")
    assert validating["metadata"]["annotations"] == {"cert-manager.io/inject-ca-from": inject}
    (hook,) = validating["webhooks"]
    assert hook["name"] == "vwidget-v1.test.kubewerk.dev"
    assert hook["clientConfig"]["service"] == {
        "name": "widget-operator-webhook",
        "namespace": "widget-operator-system",
        "path": "/validate-test-kubewerk-dev-v1-widget",
        "port": 443,
    }
    assert hook["rules"] == [
        {
            "apiGroups": ["test.kubewerk.dev"],
            "apiVersions": ["v1"],
            "operations": ["CREATE", "UPDATE"],
            "resources": ["widgets"],
            "scope": "Namespaced",
        }
    ]
    assert hook["sideEffects"] == "None"
    assert mutating["webhooks"][0]["sideEffects"] == "NoneOnDryRun"
    (certificate,) = by_kind(docs, "Certificate")
    assert certificate["spec"]["dnsNames"] == [
        "widget-operator-webhook.widget-operator-system.svc",
        "widget-operator-webhook.widget-operator-system.svc.cluster.local",
    ]
    (deployment,) = by_kind(docs, "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    assert pod["containers"][0]["volumeMounts"] == [
        {"mountPath": "/etc/widget-certs", "name": "webhook-cert", "readOnly": True}
    ]
    assert pod["volumes"] == [
        {"name": "webhook-cert", "secret": {"secretName": certificate["spec"]["secretName"]}}
    ]
    webhook_service = next(
        s for s in by_kind(docs, "Service") if s["metadata"]["name"] == "widget-operator-webhook"
    )
    assert webhook_service["spec"]["ports"][0]["targetPort"] == "webhook-server"
    assert any(p["name"] == "webhook-server" for p in pod["containers"][0]["ports"])
    code, out, _ = kubewerk("lint", str(tmp_path / "cm"))
    assert code == 0, out
    await apply_all(kube_client, docs)

    # a Secret to fill instead of cert-manager; the earlier certificate file is replaced
    files = generate(
        tmp_path / "cm", "tests.observe.deploy_webhook_operator:manager", "--certs", "secret"
    )
    docs = manifests(tmp_path / "cm")
    assert not by_kind(docs, "Certificate") and "annotations" not in validating_of(docs)["metadata"]
    (secret,) = by_kind(docs, "Secret")
    assert secret["type"] == "kubernetes.io/tls" and set(secret["data"]) == {"tls.crt", "tls.key"}
    assert "webhook/certificate.yaml" in files


def validating_of(docs: list[dict[str, Any]]) -> dict[str, Any]:
    (found,) = by_kind(docs, "ValidatingWebhookConfiguration")
    return found


def test_usage_errors_are_one_line(tmp_path: Path) -> None:
    for args, message in [
        (["--replicas", "0"], "--replicas 0: must be at least 1"),
        (["--requests", "cpu=lots"], "--requests cpu='lots': not a Kubernetes quantity"),
        (["-n", "Bad_NS"], "--namespace 'Bad_NS'"),
    ]:
        code, _, err = kubewerk(
            "gen",
            "deploy",
            "examples.database_operator.main:manager",
            "--image",
            "op:1",
            "-o",
            str(tmp_path),
            *args,
        )
        assert code == 2 and message in err and "Traceback" not in err, err


def rbac_from(directory: Path) -> list[dict[str, Any]]:
    docs = manifests(directory)
    return [d for d in docs if d["kind"].endswith(("Role", "RoleBinding", "ServiceAccount"))]


@pytest.mark.kubewerk_rbac
async def test_the_generated_rbac_suffices_for_the_example_operator(
    tmp_path: Path, kube_client: Client, run_manager: Any, request: pytest.FixtureRequest
) -> None:
    """The database operator, two replicas' worth of RBAC (leader election on), run as
    its ServiceAccount: every request it makes is allowed (the fixture fails the test
    with the 403s otherwise)."""
    import examples.database_operator.main as main

    main = importlib.reload(main)  # a manager of its own, put back after the test
    request.addfinalizer(lambda: importlib.reload(main))
    from examples.database_operator.models import BackupPolicy, Database

    generate(tmp_path, "examples.database_operator.main:manager", "--replicas", "2")
    namespace = "database-operator-system"
    await kube_client.create(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
    )
    await install_crds(kube_client, Database, BackupPolicy)
    mgr = main.manager
    mgr.probe_port = None
    mgr.leader_election = True  # what --leader-elect in the Deployment turns on
    mgr.leader_election_namespace = namespace
    await run_manager(mgr, namespace=namespace, rbac=rbac_from(tmp_path))
    await wait_for(lambda: mgr.is_leader, timeout=15)
    await kube_client.create(
        {
            "apiVersion": "example.kubewerk.dev/v1",
            "kind": "BackupPolicy",
            "metadata": {"name": "nightly", "namespace": "default"},
            "spec": {"databaseRef": {"name": "orders"}},
        }
    )
    await kube_client.create(
        {
            "apiVersion": "example.kubewerk.dev/v1",
            "kind": "Database",
            "metadata": {"name": "orders", "namespace": "default"},
            "spec": {"engine": "mysql"},
        }
    )

    async def ready(kind: Any, name: str) -> bool:
        obj = await kube_client.get(kind, name, "default")
        return (
            any(c.type == "Ready" and c.status == "True" for c in (obj.status.conditions or []))
            if obj.status
            else False
        )

    await wait_for(lambda: ready(Database, "orders"), timeout=15)
    await wait_for(lambda: ready(BackupPolicy, "nightly"), timeout=15)
    await kube_client.delete(Database, "orders", "default")

    async def gone() -> bool:
        return not (await kube_client.list(Database, "default")).items

    await wait_for(gone, timeout=15)


@pytest.mark.kubewerk_rbac
async def test_the_generated_rbac_suffices_for_the_platform(
    tmp_path: Path, kube_client: Client, run_manager: Any, request: pytest.FixtureRequest
) -> None:
    """The platform example as its ServiceAccount: a tenant's whole stack provisioned
    (reads, status writes, finalizers, Events, the Secret a binding reads), then torn
    down (the kernel's cascading deletes)."""
    import examples.platform_demo.main as main

    before = os.environ.get("KUBEWERK_PLATFORM_DELAY")

    def restore() -> None:
        if before is None:
            os.environ.pop("KUBEWERK_PLATFORM_DELAY", None)
        else:
            os.environ["KUBEWERK_PLATFORM_DELAY"] = before
        importlib.reload(main)  # the module's own platform again, as other tests expect

    request.addfinalizer(restore)
    os.environ["KUBEWERK_PLATFORM_DELAY"] = "0.01"
    main = importlib.reload(main)
    from examples.platform_demo.models import KINDS

    generate(tmp_path, "examples.platform_demo:platform")
    namespace = "platform-example-system"
    for ns in (namespace, "acme"):
        await kube_client.create(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
        )
    await install_crds(kube_client, *KINDS)
    main.manager.probe_port = None
    await run_manager(main.platform, namespace=namespace, rbac=rbac_from(tmp_path))
    stack = [
        d
        for d in yaml.safe_load_all((ROOT / "examples/platform_demo/stack/acme.yaml").read_text())
        if d
    ]
    for doc in stack:
        if doc["kind"] != "Tenant":
            doc["metadata"]["namespace"] = "acme"
        await kube_client.create(doc)

    async def all_ready() -> bool:
        for doc in stack:
            if not doc["apiVersion"].startswith("platform.kubewerk.dev/"):
                continue  # the Secret a CredentialBinding reads
            rt = await kube_client.resolve(doc["apiVersion"], doc["kind"])
            obj = await kube_client.get(
                rt, doc["metadata"]["name"], doc["metadata"].get("namespace")
            )
            conditions = (obj.get("status") or {}).get("conditions") or []
            if not any(c["type"] == "Ready" and c["status"] == "True" for c in conditions):
                return False
        return True

    await wait_for(all_ready, timeout=60)
    tenant = next(d for d in stack if d["kind"] == "Tenant")
    rt = await kube_client.resolve("platform.kubewerk.dev/v1", "Tenant")
    await kube_client.delete(rt, tenant["metadata"]["name"])

    async def torn_down() -> bool:
        return not (await kube_client.list(rt)).items

    await wait_for(torn_down, timeout=60)
