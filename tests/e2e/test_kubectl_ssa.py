"""The real ``kubectl`` doing server-side apply against the embedded API server:
``apply --server-side`` (with ``--field-manager`` and ``--force-conflicts``),
``get --show-managed-fields`` against the default, and ``diff --server-side``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .conftest import KubectlRun

pytestmark = pytest.mark.e2e

DB = "database.demo.kubewerk.dev"


def manifest(replicas: int, *, engine: str = "postgres", extra: str = "") -> str:
    return f"""apiVersion: demo.kubewerk.dev/v1
kind: Database
metadata:
  name: orders
  namespace: default
spec:
  engine: {engine}
  replicas: {replicas}
{extra}"""


def get(kc: KubectlRun, *args: str) -> Any:
    return json.loads(kc("get", f"{DB}/orders", "-n", "default", "-o", "json", *args).stdout)


def managers(obj: Any) -> dict[str, dict[str, Any]]:
    return {e["manager"]: e for e in obj["metadata"]["managedFields"]}


def test_apply_server_side_create_reapply_conflict_force(kc: KubectlRun, demo: Path) -> None:
    out = kc("apply", "--server-side", "-f", "-", input=manifest(3)).stdout
    assert out.strip() == f"{DB}/orders serverside-applied"
    first = get(kc, "--show-managed-fields")
    entry = managers(first)["kubectl"]
    assert entry["operation"] == "Apply"
    assert entry["fieldsV1"]["f:spec"] == {"f:engine": {}, "f:replicas": {}}
    # the same manifest again: kubectl says so, the server writes nothing
    out = kc("apply", "--server-side", "-f", "-", input=manifest(3)).stdout
    assert out.strip() == f"{DB}/orders serverside-applied"
    assert get(kc)["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    # another manager changing a field kubectl owns: the conflict, as kubectl prints it
    bad = kc(
        "apply",
        "--server-side",
        "--field-manager=scaler",
        "-f",
        "-",
        input=manifest(5),
        check=False,
    )
    assert bad.returncode == 1
    assert 'Apply failed with 1 conflict: conflict with "kubectl": .spec.replicas' in bad.stderr
    assert "--force-conflicts" in bad.stderr  # kubectl's own advice follows the server's message
    assert get(kc)["spec"]["replicas"] == 3
    out = kc(
        "apply",
        "--server-side",
        "--field-manager=scaler",
        "--force-conflicts",
        "-f",
        "-",
        input=manifest(5),
    ).stdout
    assert out.strip() == f"{DB}/orders serverside-applied"
    taken = get(kc, "--show-managed-fields")
    assert taken["spec"]["replicas"] == 5
    owners = managers(taken)
    assert owners["scaler"]["fieldsV1"]["f:spec"] == {"f:engine": {}, "f:replicas": {}}
    # kubectl kept nothing it applied alone (engine is shared, replicas taken), so its
    # set is what the two still share
    assert owners["kubectl"]["fieldsV1"]["f:spec"] == {"f:engine": {}}


def test_managed_fields_hidden_by_kubectl_not_by_the_server(kc: KubectlRun, demo: Path) -> None:
    kc("apply", "--server-side", "-f", "-", input=manifest(3))
    assert "managedFields" not in get(kc)["metadata"]
    assert "managedFields:" not in kc("get", f"{DB}/orders", "-n", "default", "-o", "yaml").stdout
    shown = kc("get", f"{DB}/orders", "-n", "default", "-o", "yaml", "--show-managed-fields").stdout
    assert "managedFields:" in shown and "manager: kubectl" in shown
    raw = json.loads(
        kc("get", "--raw", "/apis/demo.kubewerk.dev/v1/namespaces/default/databases/orders").stdout
    )
    assert raw["metadata"]["managedFields"][0]["manager"] == "kubectl"


def test_diff_server_side(kc: KubectlRun, demo: Path) -> None:
    kc("apply", "--server-side", "-f", "-", input=manifest(3))
    same = kc("diff", "--server-side", "-f", "-", input=manifest(3), check=False)
    assert same.returncode == 0, same.stderr
    assert same.stdout == ""
    changed = kc("diff", "--server-side", "-f", "-", input=manifest(4), check=False)
    assert changed.returncode == 1, changed.stderr
    lines = changed.stdout.splitlines()
    assert "-  replicas: 3" in lines and "+  replicas: 4" in lines
    assert not any("managedFields" in line for line in lines)
    # a diff is a dry run: nothing was written
    assert get(kc)["spec"]["replicas"] == 3
    # a field another manager owns: diff --server-side reports the conflict too
    conflict = kc(
        "diff",
        "--server-side",
        "--field-manager=other",
        "-f",
        "-",
        input=manifest(7),
        check=False,
    )
    assert conflict.returncode > 1
    assert 'conflict with "kubectl": .spec.replicas' in conflict.stderr


def test_server_side_apply_after_client_side_apply(kc: KubectlRun, demo: Path) -> None:
    kc("apply", "-f", "-", input=manifest(3, extra="  version: '16'\n"))
    out = kc("apply", "--server-side", "-f", "-", input=manifest(3)).stdout
    assert out.strip() == f"{DB}/orders serverside-applied"
    # the client-side apply's fields migrate to kubectl's Apply entry, so the field the
    # manifest dropped is removed, as on a cluster
    assert "version" not in get(kc)["spec"]


ROUTES_CRD = """apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: routes.keys.kubewerk.dev
spec:
  group: keys.kubewerk.dev
  scope: Namespaced
  names: {plural: routes, singular: route, kind: Route}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                backends:
                  type: array
                  x-kubernetes-list-type: map
                  x-kubernetes-list-map-keys: [name]
                  items:
                    type: object
                    required: [name]
                    properties:
                      name: {type: string}
                      weight: {type: integer}
"""


def route(*backends: tuple[str, int]) -> str:
    items = "".join(f"    - name: {n}\n      weight: {w}\n" for n, w in backends)
    return (
        "apiVersion: keys.kubewerk.dev/v1\nkind: Route\n"
        "metadata:\n  name: r\n  namespace: default\n"
        f"spec:\n  backends:\n{items}"
    )


def test_apply_server_side_two_managers_one_map_list_item_each(
    kc: KubectlRun, tserver: object
) -> None:
    kc("apply", "-f", "-", input=ROUTES_CRD)
    kc("wait", "--for=condition=Established", "crd/routes.keys.kubewerk.dev", "--timeout=10s")
    for manager, backend in (("team-a", ("a", 1)), ("team-b", ("b", 2))):
        kc("apply", "--server-side", f"--field-manager={manager}", "-f", "-", input=route(backend))
    got = json.loads(
        kc("get", "routes.keys.kubewerk.dev/r", "-o", "json", "--show-managed-fields").stdout
    )
    assert got["spec"]["backends"] == [{"name": "a", "weight": 1}, {"name": "b", "weight": 2}]
    owners = managers(got)
    assert list(owners["team-a"]["fieldsV1"]["f:spec"]["f:backends"]) == ['k:{"name":"a"}']
    assert list(owners["team-b"]["fieldsV1"]["f:spec"]["f:backends"]) == ['k:{"name":"b"}']
    # team-a changing team-b's item: the conflict names the item by its key
    bad = kc(
        "apply",
        "--server-side",
        "--field-manager=team-a",
        "-f",
        "-",
        input=route(("a", 1), ("b", 9)),
        check=False,
    )
    assert bad.returncode == 1
    assert 'conflict with "team-b": .spec.backends[name="b"].weight' in bad.stderr
    # team-a applies without its item: only that item goes
    empty = route().replace("  backends:\n", "  backends: []\n")
    kc("apply", "--server-side", "--field-manager=team-a", "-f", "-", input=empty)
    got = json.loads(kc("get", "routes.keys.kubewerk.dev/r", "-o", "json").stdout)
    assert got["spec"]["backends"] == [{"name": "b", "weight": 2}]
    # duplicate keys in a manifest: refused with the server's words, nothing changes
    dup = kc(
        "apply",
        "--server-side",
        "--field-manager=team-a",
        "-f",
        "-",
        input=route(("c", 1), ("c", 2)),
        check=False,
    )
    assert dup.returncode == 1
    assert '.spec.backends: duplicate entries for key [name="c"]' in dup.stderr
