"""The real ``kubectl`` against the embedded API server.

Every test gets a fresh in-memory server (``tserver``) with the demo CRD
(``databases.demo.kubewerk.dev``) applied by kubectl itself. What kubectl prints is
asserted the way it prints it against a real cluster.
"""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import pytest
import yaml

from .conftest import CRD_NAME, KubectlRun, wait_until

pytestmark = pytest.mark.e2e

DB = "database.demo.kubewerk.dev"


def get_json(kc: KubectlRun, *args: str) -> Any:
    return json.loads(kc("get", *args, "-o", "json").stdout)


def table(text: str) -> list[list[str]]:
    """kubectl's human-readable table as rows of cells (header first)."""
    return [line.split() for line in text.strip().splitlines()]


def apply_text(kc: KubectlRun, manifest: str, *extra: str) -> str:
    return kc("apply", "-f", "-", *extra, input=manifest).stdout


def owned_configmap(
    name: str, owner: dict[str, Any], block: bool = False, finalizers: list[str] | None = None
) -> str:
    ref = {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
    }
    if block:
        ref["blockOwnerDeletion"] = True
    meta: dict[str, Any] = {"name": name, "ownerReferences": [ref]}
    if finalizers:
        meta["finalizers"] = finalizers
    return yaml.safe_dump(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"k": "v"}}
    )


def database(name: str, **spec: Any) -> str:
    meta: dict[str, Any] = {"name": name}
    if "finalizers" in spec:
        meta["finalizers"] = spec.pop("finalizers")
    return yaml.safe_dump(
        {
            "apiVersion": "demo.kubewerk.dev/v1",
            "kind": "Database",
            "metadata": meta,
            "spec": {"engine": "postgres", **spec},
        }
    )


# -- apply ---------------------------------------------------------------------------


def test_apply_twice_with_a_change(kc: KubectlRun, demo: Path, tmp_path: Path) -> None:
    out = kc("apply", "-f", str(demo / "databases.yaml")).stdout
    assert f"{DB}/orders created" in out and f"{DB}/sessions created" in out
    before = get_json(kc, "db", "orders")

    out = kc("apply", "-f", str(demo / "databases.yaml")).stdout
    assert f"{DB}/orders unchanged" in out and f"{DB}/sessions unchanged" in out
    assert (
        get_json(kc, "db", "orders")["metadata"]["resourceVersion"]
        == before["metadata"]["resourceVersion"]
    )

    # change replicas, drop the version field and the label: a three-way merge removes them
    docs = list(yaml.safe_load_all((demo / "databases.yaml").read_text()))
    docs[0]["spec"]["replicas"] = 5
    del docs[0]["spec"]["version"]
    del docs[0]["metadata"]["labels"]
    changed = tmp_path / "databases.yaml"
    changed.write_text(yaml.safe_dump_all(docs))
    out = kc("apply", "-f", str(changed)).stdout
    assert f"{DB}/orders configured" in out and f"{DB}/sessions unchanged" in out

    after = get_json(kc, "db", "orders")
    assert after["spec"] == {
        "engine": "postgres",
        "replicas": 5,
        "storage": "1Gi",
    }  # storage: schema default
    assert "labels" not in after["metadata"] or "team" not in after["metadata"]["labels"]
    assert after["metadata"]["generation"] == 2
    assert after["metadata"]["uid"] == before["metadata"]["uid"]
    assert int(after["metadata"]["resourceVersion"]) > int(before["metadata"]["resourceVersion"])
    last = json.loads(
        after["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
    )
    assert last["spec"] == {"engine": "postgres", "replicas": 5}


def test_apply_server_side_creates_and_records_kubectl_as_manager(
    kc: KubectlRun, demo: Path
) -> None:
    out = kc("apply", "--server-side", "-f", str(demo / "databases.yaml")).stdout
    assert "database.demo.kubewerk.dev/orders serverside-applied" in out
    one = json.loads(kc("get", "db", "orders", "-o", "json", "--show-managed-fields").stdout)
    assert one["spec"]["engine"] == "postgres"
    managers = [(e["manager"], e["operation"]) for e in one["metadata"]["managedFields"]]
    assert managers == [("kubectl", "Apply")]
    # applied again unchanged: still one Apply entry, and nothing changes
    again = kc("apply", "--server-side", "-f", str(demo / "databases.yaml")).stdout
    assert "database.demo.kubewerk.dev/orders serverside-applied" in again
    rv = one["metadata"]["resourceVersion"]
    assert get_json(kc, "db", "orders")["metadata"]["resourceVersion"] == rv


# -- get -----------------------------------------------------------------------------


def test_get_output_formats_and_printer_columns(kc: KubectlRun, demo: Path) -> None:
    kc("apply", "-f", str(demo / "databases.yaml"))

    listed = yaml.safe_load(kc("get", "db", "-o", "yaml").stdout)
    assert [i["metadata"]["name"] for i in listed["items"]] == ["orders", "sessions"]
    assert {i["kind"] for i in listed["items"]} == {"Database"}

    one = get_json(kc, "db", "orders")
    assert one["apiVersion"] == "demo.kubewerk.dev/v1"
    assert one["metadata"]["namespace"] == "default"
    assert one["metadata"]["generation"] == 1
    assert one["metadata"]["labels"] == {"team": "checkout"}
    assert one["spec"] == {"engine": "postgres", "version": "16", "replicas": 3, "storage": "1Gi"}

    rows = table(kc("get", "db").stdout)
    assert rows[0] == ["NAME", "ENGINE", "REPLICAS", "READY", "AGE"]
    assert rows[1][:3] == ["orders", "postgres", "3"]
    assert rows[2][:3] == ["sessions", "mysql", "1"]  # replicas: schema default

    patch = {
        "status": {
            "replicas": 3,
            "conditions": [{"type": "Ready", "status": "True", "reason": "Up"}],
        }
    }
    kc("patch", "db", "orders", "--subresource=status", "--type=merge", "-p", json.dumps(patch))
    rows = table(kc("get", "db", "orders").stdout)
    assert rows[1][:4] == ["orders", "postgres", "3", "True"]

    assert kc("get", "db", "-o", "name").stdout.split() == [f"{DB}/orders", f"{DB}/sessions"]
    assert kc("get", "db", "-l", "team=identity", "-o", "name").stdout.split() == [f"{DB}/sessions"]
    assert kc(
        "get", "db", "--field-selector", "metadata.name=orders", "-o", "name"
    ).stdout.split() == [f"{DB}/orders"]
    bad = kc("get", "db", "--field-selector", "spec.engine=mysql", check=False)
    assert bad.returncode != 0 and "field label not supported: spec.engine" in bad.stderr
    assert kc("get", "db", "orders", "-o", "jsonpath={.status.conditions[0].reason}").stdout == "Up"
    # the CRD's category "all"
    assert kc("get", "all", "-o", "name").stdout.split() == [
        "service/kubernetes",  # kube-apiserver's own Service, as on a cluster
        f"{DB}/orders",
        f"{DB}/sessions",
    ]
    # the CRD itself, with the status the controller wrote
    crd = get_json(kc, "crd", CRD_NAME)
    conds = {c["type"]: c for c in crd["status"]["conditions"]}
    assert (
        conds["Established"]["status"] == "True"
        and conds["NamesAccepted"]["reason"] == "NoConflicts"
    )
    assert crd["status"]["storedVersions"] == ["v1"]


def test_get_watch(kc: KubectlRun, demo: Path, kubectl_popen: Any) -> None:
    kc("apply", "-f", str(demo / "databases.yaml"))
    plain = kubectl_popen("get", "db", "-w")
    events = kubectl_popen("get", "db", "-w", "--output-watch-events")
    assert plain.wait_for(lambda line: line.split()[:1] == ["NAME"]).split()[:4] == [
        "NAME",
        "ENGINE",
        "REPLICAS",
        "READY",
    ]
    plain.wait_for(lambda line: line.startswith("sessions"))
    events.wait_for(lambda line: line.split()[:2] == ["ADDED", "orders"])
    events.wait_for(lambda line: line.split()[:2] == ["ADDED", "sessions"])

    kc("patch", "db", "orders", "--type=merge", "-p", '{"spec":{"replicas":4}}')
    line = events.wait_for(lambda line: line.split()[:2] == ["MODIFIED", "orders"])
    assert line.split()[2:4] == ["postgres", "4"]
    assert plain.wait_for(lambda line: line.startswith("orders")).split()[:3] == [
        "orders",
        "postgres",
        "4",
    ]

    apply_text(kc, database("analytics", replicas=2))
    assert events.wait_for(lambda line: "analytics" in line).split()[:4] == [
        "ADDED",
        "analytics",
        "postgres",
        "2",
    ]
    kc("delete", "db", "sessions")
    events.wait_for(lambda line: line.split()[:2] == ["DELETED", "sessions"])
    plain.wait_for(lambda line: line.startswith("analytics"))
    plain.wait_for(lambda line: line.startswith("sessions"))  # kubectl prints the deleted row too
    assert plain.proc.poll() is None and events.proc.poll() is None  # still watching
    assert "error" not in events.stop().lower()


def test_describe_shows_fields_and_events(kc: KubectlRun, demo: Path) -> None:
    kc("apply", "-f", str(demo / "databases.yaml"))
    owner = get_json(kc, "db", "orders")
    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "orders.provisioned"},
        "involvedObject": {
            "apiVersion": "demo.kubewerk.dev/v1",
            "kind": "Database",
            "name": "orders",
            "namespace": "default",
            "uid": owner["metadata"]["uid"],
        },
        "reason": "Provisioned",
        "message": "primary is up",
        "type": "Normal",
        "count": 1,
        "source": {"component": "db-operator"},
        "firstTimestamp": owner["metadata"]["creationTimestamp"],
        "lastTimestamp": owner["metadata"]["creationTimestamp"],
    }
    apply_text(kc, json.dumps(event))
    out = kc("describe", "db", "orders").stdout
    assert out.splitlines()[0].split() == ["Name:", "orders"]
    assert "Namespace:    default" in out
    assert "Labels:       team=checkout" in out
    assert "Kind:         Database" in out
    assert "Engine:    postgres" in out
    events = out.split("Events:")[1]
    assert "Provisioned" in events and "db-operator" in events and "primary is up" in events
    # the other object has no events (involvedObject field selectors filter)
    assert "Events:" in (other := kc("describe", "db", "sessions").stdout)
    assert "Provisioned" not in other


# -- changes -------------------------------------------------------------------------


def test_patch_label_annotate_scale(kc: KubectlRun, demo: Path) -> None:
    kc("apply", "-f", str(demo / "databases.yaml"))
    assert kc(
        "patch", "db", "orders", "--type=merge", "-p", '{"spec":{"replicas":2}}'
    ).stdout.strip() == (f"{DB}/orders patched")
    kc(
        "patch",
        "db",
        "orders",
        "--type=json",
        "-p",
        '[{"op":"test","path":"/spec/replicas","value":2},{"op":"replace","path":"/spec/version","value":"17"}]',
    )
    obj = get_json(kc, "db", "orders")
    assert obj["spec"] == {"engine": "postgres", "version": "17", "replicas": 2, "storage": "1Gi"}
    assert obj["metadata"]["generation"] == 3

    failed = kc(
        "patch",
        "db",
        "orders",
        "--type=json",
        "-p",
        '[{"op":"test","path":"/spec/replicas","value":9},{"op":"remove","path":"/spec/version"}]',
        check=False,
    )
    assert failed.returncode != 0 and "The request is invalid" in failed.stderr
    # status is not written through the main resource (status subresource on)
    assert kc(
        "patch", "db", "orders", "--type=merge", "-p", '{"status":{"replicas":9}}'
    ).stdout.strip() == (f"{DB}/orders patched (no change)")
    strategic = kc("patch", "db", "orders", "-p", '{"spec":{"replicas":1}}', check=False)
    assert (
        strategic.returncode != 0
        and "application/strategic-merge-patch+json is not supported" in strategic.stderr
    )
    missing = kc("patch", "db", "nope", "--type=merge", "-p", "{}", check=False)
    assert 'databases.demo.kubewerk.dev "nope" not found' in missing.stderr

    assert kc("label", "db", "orders", "tier=gold").stdout.strip() == f"{DB}/orders labeled"
    kc("label", "db", "orders", "team=payments", "--overwrite")
    kc("label", "db", "sessions", "team-")
    kc("annotate", "db", "orders", "owner=alice", "note=primary")
    kc("annotate", "db", "orders", "note-")
    obj = get_json(kc, "db", "orders")
    assert obj["metadata"]["labels"] == {"team": "payments", "tier": "gold"}
    assert (
        obj["metadata"]["annotations"]["owner"] == "alice"
        and "note" not in obj["metadata"]["annotations"]
    )
    assert obj["metadata"]["generation"] == 3  # metadata changes leave generation alone
    assert "labels" not in get_json(kc, "db", "sessions")["metadata"]
    assert kc("get", "db", "-l", "tier=gold,team in (payments)", "-o", "name").stdout.split() == [
        f"{DB}/orders"
    ]

    assert kc("scale", "db", "orders", "--replicas=4").stdout.strip() == f"{DB}/orders scaled"
    assert get_json(kc, "db", "orders")["spec"]["replicas"] == 4
    precondition = kc("scale", "db", "orders", "--current-replicas=2", "--replicas=5", check=False)
    assert (
        precondition.returncode != 0 and "Expected replicas to be 2, was 4" in precondition.stderr
    )


def _editor(tmp_path: Path, body: str) -> str:
    script = tmp_path / "editor.sh"
    script.write_text("#!/bin/sh\n" + body + "\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


def test_edit_with_a_scripted_editor(kc: KubectlRun, demo: Path, tmp_path: Path) -> None:
    kc("apply", "-f", str(demo / "databases.yaml"))
    editor = _editor(
        tmp_path,
        'sed -i -e "s/replicas: 3/replicas: 6/" -e "s/team: checkout/team: platform/" "$1"',
    )
    out = kc("edit", "db", "orders", env={"KUBE_EDITOR": editor, "EDITOR": editor})
    assert out.stdout.strip() == f"{DB}/orders edited"
    obj = get_json(kc, "db", "orders")
    assert obj["spec"]["replicas"] == 6 and obj["metadata"]["labels"] == {"team": "platform"}
    assert obj["metadata"]["generation"] == 2

    noop = _editor(tmp_path, "true")
    out = kc("edit", "db", "orders", env={"KUBE_EDITOR": noop, "EDITOR": noop})
    assert "Edit cancelled, no changes made." in out.stdout + out.stderr


def test_diff_exit_codes(kc: KubectlRun, demo: Path, tmp_path: Path) -> None:
    kc("apply", "-f", str(demo / "databases.yaml"))
    same = kc("diff", "-f", str(demo / "databases.yaml"), check=False)
    assert same.returncode == 0, same.stderr
    assert same.stdout == ""

    changed = tmp_path / "changed.yaml"
    changed.write_text(
        (demo / "databases.yaml").read_text().replace("replicas: 3", "replicas: 4")
        + "---\n"
        + database("analytics")
    )
    diff = kc("diff", "-f", str(changed), check=False)
    assert diff.returncode == 1, diff.stderr
    assert "-  replicas: 3" in diff.stdout and "+  replicas: 4" in diff.stdout
    assert "+  name: analytics" in diff.stdout  # a dry-run create for the new object
    # diff is a dry run: nothing changed on the server
    assert get_json(kc, "db", "orders")["spec"]["replicas"] == 3
    assert kc("get", "db", "analytics", check=False).returncode != 0


def test_wait_for_condition(kc: KubectlRun, demo: Path, kubectl_popen: Any) -> None:
    kc("apply", "-f", str(demo / "databases.yaml"))
    timed_out = kc("wait", "--for=condition=Ready", "db/orders", "--timeout=1s", check=False)
    assert timed_out.returncode != 0 and "timed out waiting for the condition" in timed_out.stderr

    waiter = kubectl_popen("wait", "--for=condition=Ready", "db/orders", "--timeout=20s")
    status = {
        "status": {
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "Up",
                    "message": "ok",
                    "lastTransitionTime": "2025-01-01T00:00:00Z",
                }
            ]
        }
    }
    kc("patch", "db", "orders", "--subresource=status", "--type=merge", "-p", json.dumps(status))
    assert waiter.wait_for(lambda line: True) == f"{DB}/orders condition met"
    assert waiter.proc.wait(timeout=10) == 0
    out = kc(
        "wait", "--for=jsonpath={.status.conditions[0].reason}=Up", "db/orders", "--timeout=5s"
    ).stdout
    assert out.strip() == f"{DB}/orders condition met"
    # --for=delete waiting on a held object: see test_delete_blocked_by_a_finalizer


def test_delete_blocked_by_a_finalizer(kc: KubectlRun, demo: Path, kubectl_popen: Any) -> None:
    apply_text(kc, database("held", finalizers=["demo.kubewerk.dev/hold"]))
    assert kc("delete", "db", "held", "--wait=false").stdout.strip() == f'{DB} "held" deleted'
    obj = get_json(kc, "db", "held")
    assert obj["metadata"]["deletionTimestamp"]
    assert obj["metadata"]["finalizers"] == ["demo.kubewerk.dev/hold"]

    refused = kc(
        "patch",
        "db",
        "held",
        "--type=json",
        "-p",
        '[{"op":"add","path":"/metadata/finalizers/-","value":"other/one"}]',
        check=False,
    )
    assert refused.returncode != 0
    assert "no new finalizers can be added if the object is being deleted" in refused.stderr
    # the spec may still change while deleting
    kc("patch", "db", "held", "--type=merge", "-p", '{"spec":{"replicas":2}}')

    waiter = kubectl_popen("-v=6", "wait", "--for=delete", "db/held", "--timeout=20s")
    waiter.watching()
    kc("get", "db", "held")  # still there
    kc(
        "patch",
        "db",
        "held",
        "--type=json",
        "-p",
        '[{"op":"remove","path":"/metadata/finalizers"}]',
    )
    assert waiter.wait_for(lambda line: True) == f"{DB}/held condition met"
    gone = kc("get", "db", "held", check=False)
    assert gone.returncode != 0 and 'databases.demo.kubewerk.dev "held" not found' in gone.stderr


# -- discovery and schema --------------------------------------------------------------


def test_explain(kc: KubectlRun, demo: Path) -> None:
    # by plural: kubectl expands short names from its discovery cache, which predates the CRD
    out = kc("explain", "databases").stdout
    assert "KIND:       Database" in out and "GROUP:      demo.kubewerk.dev" in out
    assert "Database is a managed database instance." in out
    assert (
        "spec\t<Object>" in out
        or "spec\t<Object> -required-" in out
        or "spec" in out.split("FIELDS:")[1]
    )
    field = kc("explain", "db.spec.replicas").stdout
    assert "FIELD: replicas <integer>" in field and "Number of instances." in field
    enum = kc("explain", "db.spec.engine").stdout
    assert "postgres" in enum and "mysql" in enum
    recursive = kc("explain", "db", "--recursive").stdout
    assert "conditions\t<[]Object>" in recursive and "lastTransitionTime\t<string>" in recursive
    missing = kc("explain", "db.spec.nope", check=False)
    assert missing.returncode != 0 and 'field "nope" does not exist' in missing.stderr


def test_api_resources(kc: KubectlRun, demo: Path) -> None:
    rows = {(r[0], r[-1]): r for r in table(kc("api-resources").stdout)[1:]}
    assert rows[("databases", "Database")] == [
        "databases",
        "db",
        "demo.kubewerk.dev/v1",
        "true",
        "Database",
    ]
    assert rows[("configmaps", "ConfigMap")] == ["configmaps", "cm", "v1", "true", "ConfigMap"]
    assert rows[("namespaces", "Namespace")] == ["namespaces", "ns", "v1", "false", "Namespace"]
    assert ("customresourcedefinitions", "CustomResourceDefinition") in rows
    assert ("leases", "Lease") in rows

    wide = table(kc("api-resources", "--api-group=demo.kubewerk.dev", "-o", "wide").stdout)
    assert wide[1][5].split(",") == [
        "create",
        "delete",
        "deletecollection",
        "get",
        "list",
        "patch",
        "update",
        "watch",
    ]
    assert wide[1][6] == "all"
    cluster = kc("api-resources", "--namespaced=false", "-o", "name").stdout.split()
    assert "namespaces" in cluster and "configmaps" not in cluster
    assert "demo.kubewerk.dev/v1" in kc("api-versions").stdout.split()


# -- built-in kinds ------------------------------------------------------------------------


def test_namespaces(kc: KubectlRun, demo: Path, kubectl_popen: Any) -> None:
    names = [r[0] for r in table(kc("get", "ns").stdout)[1:]]
    assert {"default", "kube-system", "kube-public"} <= set(names)

    assert (
        kc("create", "namespace", "direct").stdout.strip() == "namespace/direct created"
    )  # protobuf body

    out = apply_text(
        kc,
        yaml.safe_dump_all(
            [
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}},
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "settings", "namespace": "team-a"},
                    "data": {"a": "1"},
                },
                {
                    "apiVersion": "demo.kubewerk.dev/v1",
                    "kind": "Database",
                    "metadata": {
                        "name": "held",
                        "namespace": "team-a",
                        "finalizers": ["demo.kubewerk.dev/hold"],
                    },
                    "spec": {"engine": "postgres"},
                },
            ]
        ),
    )
    assert "namespace/team-a created" in out and "configmap/settings created" in out
    ns = get_json(kc, "ns", "team-a")
    assert ns["status"]["phase"] == "Active" and ns["spec"]["finalizers"] == ["kubernetes"]
    assert ns["metadata"]["labels"]["kubernetes.io/metadata.name"] == "team-a"

    kc("delete", "ns", "team-a", "--wait=false")
    rows = table(kc("get", "ns", "team-a").stdout)
    assert rows[1][:2] == ["team-a", "Terminating"]
    # the content goes; the finalizer on the database holds the namespace in Terminating
    wait_until(lambda: kc("get", "cm", "-n", "team-a", "-o", "name").stdout.strip() == "")
    assert get_json(kc, "db", "held", "-n", "team-a")["metadata"]["deletionTimestamp"]
    refused = apply_text_check(
        kc,
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "late", "namespace": "team-a"},
            }
        ),
    )
    assert (
        "unable to create new content in namespace team-a because it is being terminated" in refused
    )
    assert table(kc("get", "ns", "team-a").stdout)[1][1] == "Terminating"

    waiter = kubectl_popen("-v=6", "wait", "--for=delete", "ns/team-a", "--timeout=20s")
    waiter.watching()
    kc(
        "patch",
        "db",
        "held",
        "-n",
        "team-a",
        "--type=merge",
        "-p",
        '{"metadata":{"finalizers":null}}',
    )
    assert waiter.wait_for(lambda line: True) == "namespace/team-a condition met"
    assert kc("get", "ns", "team-a", check=False).returncode != 0


def apply_text_check(kc: KubectlRun, manifest: str) -> str:
    """Apply that is expected to fail; returns stderr."""
    proc = kc("apply", "-f", "-", input=manifest, check=False)
    assert proc.returncode != 0, proc.stdout
    return proc.stderr


def test_configmaps(kc: KubectlRun) -> None:
    manifest = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "app"},
        "data": {"mode": "fast", "level": "3"},
    }
    assert apply_text(kc, yaml.safe_dump(manifest)).strip() == "configmap/app created"
    assert apply_text(kc, yaml.safe_dump(manifest)).strip() == "configmap/app unchanged"
    manifest["data"] = {"mode": "slow"}
    assert apply_text(kc, yaml.safe_dump(manifest)).strip() == "configmap/app configured"
    cm = get_json(kc, "cm", "app")
    assert cm["data"] == {"mode": "slow"}  # "level" removed by the three-way (strategic) merge
    assert "generation" not in cm["metadata"]

    assert kc(
        "create",
        "-f",
        "-",
        input=yaml.safe_dump(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "other"}}
        ),
    ).stdout.strip() == ("configmap/other created")
    assert sorted(r[0] for r in table(kc("get", "cm").stdout)[1:]) == ["app", "other"]
    kc("patch", "cm", "app", "-p", '{"data":{"extra":"1"}}')  # strategic merge patch
    assert get_json(kc, "cm", "app")["data"] == {"mode": "slow", "extra": "1"}

    assert (
        kc("create", "configmap", "direct", "--from-literal=a=b").stdout.strip()
        == "configmap/direct created"
    )
    assert get_json(kc, "cm", "direct")["data"] == {"a": "b"}  # sent as protobuf
    kc("delete", "cm", "direct")

    assert kc("delete", "cm", "other").stdout.strip() == 'configmap "other" deleted'
    assert kc("get", "cm", "-o", "name").stdout.split() == ["configmap/app"]


def test_garbage_collection_cascades(kc: KubectlRun, demo: Path, kubectl_popen: Any) -> None:
    apply_text(kc, "---\n".join(database(n) for n in ("bg", "orphan", "fg")))
    owners = {i["metadata"]["name"]: i for i in get_json(kc, "db")["items"]}
    apply_text(
        kc,
        "---\n".join(
            [
                owned_configmap("bg-child", owners["bg"]),
                owned_configmap("orphan-child", owners["orphan"]),
                owned_configmap(
                    "fg-child", owners["fg"], block=True, finalizers=["demo.kubewerk.dev/hold"]
                ),
            ]
        ),
    )

    # Background (kubectl's default): the owner goes at once, then the collector removes the child
    kc("delete", "db", "bg")
    wait_until(lambda: kc("get", "cm", "bg-child", check=False).returncode != 0)

    # Orphan: the child stays, without the owner reference
    kc("delete", "db", "orphan", "--cascade=orphan")
    assert kc("get", "db", "orphan", check=False).returncode != 0
    child = get_json(kc, "cm", "orphan-child")
    assert "ownerReferences" not in child["metadata"]

    # Foreground: the owner waits (foregroundDeletion) for its blocking child
    kc("delete", "db", "fg", "--cascade=foreground", "--wait=false")
    owner = get_json(kc, "db", "fg")
    assert (
        owner["metadata"]["deletionTimestamp"]
        and "foregroundDeletion" in owner["metadata"]["finalizers"]
    )
    wait_until(lambda: get_json(kc, "cm", "fg-child")["metadata"].get("deletionTimestamp"))
    assert kc("get", "db", "fg", check=False).returncode == 0
    waiter = kubectl_popen("-v=6", "wait", "--for=delete", "db/fg", "--timeout=20s")
    waiter.watching()
    kc(
        "patch",
        "cm",
        "fg-child",
        "--type=json",
        "-p",
        '[{"op":"remove","path":"/metadata/finalizers"}]',
    )
    assert waiter.wait_for(lambda line: True) == f"{DB}/fg condition met"
    assert kc("get", "cm", "fg-child", check=False).returncode != 0
    assert kc("get", "cm", "-o", "name").stdout.split() == ["configmap/orphan-child"]


def test_crd_update_served_versions_and_deletion(
    kc: KubectlRun, demo: Path, tmp_path: Path
) -> None:
    kc("apply", "-f", str(demo / "databases.yaml"))
    crd = yaml.safe_load((demo / "crd.yaml").read_text())
    v1 = crd["spec"]["versions"][0]
    v1["additionalPrinterColumns"].insert(
        2, {"name": "Version", "type": "string", "jsonPath": ".spec.version"}
    )
    beta = {
        **json.loads(json.dumps(v1)),
        "name": "v1beta1",
        "storage": False,
        "deprecated": True,
        "deprecationWarning": "demo.kubewerk.dev/v1beta1 Database is deprecated; use v1",
    }
    crd["spec"]["versions"].append(beta)
    changed = tmp_path / "crd.yaml"
    changed.write_text(yaml.safe_dump(crd))
    assert kc("apply", "-f", str(changed)).stdout.strip() == (
        f"customresourcedefinition.apiextensions.k8s.io/{CRD_NAME} configured"
    )

    def new_column_served() -> bool:
        return table(kc("get", "db").stdout)[0] == [
            "NAME",
            "ENGINE",
            "REPLICAS",
            "VERSION",
            "READY",
            "AGE",
        ]

    wait_until(new_column_served)
    assert table(kc("get", "db", "orders").stdout)[1][:4] == ["orders", "postgres", "3", "16"]
    served = get_json(kc, "crd", CRD_NAME)
    assert served["metadata"]["generation"] == 2 and served["status"]["storedVersions"] == ["v1"]

    old = kc("get", "databases.v1beta1.demo.kubewerk.dev", "orders", "-o", "json")
    assert json.loads(old.stdout)["apiVersion"] == "demo.kubewerk.dev/v1beta1"
    assert "Warning: demo.kubewerk.dev/v1beta1 Database is deprecated; use v1" in old.stderr
    created = kc(
        "apply",
        "-f",
        "-",
        input=yaml.safe_dump(
            {
                "apiVersion": "demo.kubewerk.dev/v1beta1",
                "kind": "Database",
                "metadata": {"name": "legacy"},
                "spec": {"engine": "mysql"},
            }
        ),
    )
    assert f"{DB}/legacy created" in created.stdout and "deprecated" in created.stderr
    assert (
        get_json(kc, "db", "legacy")["apiVersion"] == "demo.kubewerk.dev/v1"
    )  # served in v1 as well

    # deleting the CRD deletes its objects, then the resource type goes
    out = kc("delete", "crd", CRD_NAME, "--timeout=20s").stdout
    assert out.strip() == f'customresourcedefinition.apiextensions.k8s.io "{CRD_NAME}" deleted'
    assert kc("get", "crd", "-o", "name").stdout.strip() == ""
    gone = kc("get", "databases.demo.kubewerk.dev", check=False)
    assert gone.returncode != 0
    assert "databases" not in kc("api-resources", "-o", "name").stdout.split()
    # recreated, the type starts empty: the objects were deleted, not just hidden
    kc("apply", "-f", str(demo / "crd.yaml"))
    kc("wait", "--for=condition=Established", f"crd/{CRD_NAME}", "--timeout=10s")
    wait_until(lambda: kc("get", "databases.demo.kubewerk.dev", check=False).returncode == 0)
    assert kc("get", "databases.demo.kubewerk.dev", "-A", "-o", "name").stdout.strip() == ""
