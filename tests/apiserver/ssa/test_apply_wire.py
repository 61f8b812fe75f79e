"""Server-side apply and managedFields over HTTP against the embedded server: the demo
Database (a CRD) and built-in ConfigMaps and Deployments."""

from __future__ import annotations

from typing import Any

import orjson

from tests.apiserver.helpers import DB_PATH, Api, database

APPLY = "application/apply-patch+yaml"
CM_PATH = "/api/v1/namespaces/default/configmaps"
DEPLOY_PATH = "/apis/apps/v1/namespaces/default/deployments"


async def _apply(api: Api, path: str, obj: dict[str, Any], query: str) -> tuple[int, Any]:
    return await api.request("PATCH", f"{path}?{query}", raw=orjson.dumps(obj), content_type=APPLY)


def _db(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "demo.kubewerk.dev/v1",
        "kind": "Database",
        "metadata": {"name": name},
        "spec": spec,
    }


def _managers(obj: dict[str, Any]) -> list[tuple[str, str]]:
    return [
        (e.get("manager", ""), e["operation"]) for e in obj["metadata"].get("managedFields", [])
    ]


async def test_apply_creates_then_noop_reapply_keeps_resource_version(api: Api) -> None:
    status, created = await _apply(
        api, f"{DB_PATH}/a1", _db("a1", engine="postgres", replicas=2), "fieldManager=me"
    )
    assert status == 201, created
    assert _managers(created) == [("me", "Apply")]
    fields = created["metadata"]["managedFields"][0]["fieldsV1"]
    assert fields == {"f:spec": {"f:engine": {}, "f:replicas": {}}}
    status, again = await _apply(
        api, f"{DB_PATH}/a1", _db("a1", engine="postgres", replicas=2), "fieldManager=me"
    )
    assert status == 200
    assert again["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


async def test_conflict_force_and_release(api: Api) -> None:
    await _apply(api, f"{DB_PATH}/a2", _db("a2", engine="postgres", replicas=2), "fieldManager=one")
    status, err = await _apply(api, f"{DB_PATH}/a2", _db("a2", replicas=3), "fieldManager=two")
    assert status == 409
    assert err["reason"] == "Conflict"
    assert err["message"] == 'Apply failed with 1 conflict: conflict with "one": .spec.replicas'
    assert err["details"]["causes"] == [
        {
            "reason": "FieldManagerConflict",
            "message": 'conflict with "one"',
            "field": ".spec.replicas",
        }
    ]
    status, obj = await _apply(
        api, f"{DB_PATH}/a2", _db("a2", replicas=3), "fieldManager=two&force=true"
    )
    assert status == 200, obj
    assert obj["spec"]["replicas"] == 3
    # "one" stops applying replicas (it no longer owns it): the value stays, owned by "two"
    status, obj = await _apply(
        api, f"{DB_PATH}/a2", _db("a2", engine="postgres"), "fieldManager=one"
    )
    assert status == 200
    assert obj["spec"]["engine"] == "postgres" and obj["spec"]["replicas"] == 3
    # "two" stops applying it: nobody owns it any more, it is removed (and the schema's
    # default, 1, fills it in again as admission defaults the object)
    status, obj = await _apply(api, f"{DB_PATH}/a2", _db("a2"), "fieldManager=two")
    assert status == 200
    assert obj["spec"]["replicas"] == 1


async def test_update_records_manager_and_apply_conflicts_with_it(api: Api) -> None:
    status, created = await api.post(f"{DB_PATH}?fieldManager=creator", database("a3", replicas=1))
    assert status == 201
    assert _managers(created) == [("creator", "Update")]
    entry = created["metadata"]["managedFields"][0]
    assert entry["apiVersion"] == "demo.kubewerk.dev/v1" and entry["fieldsType"] == "FieldsV1"
    assert entry["fieldsV1"]["f:spec"]["."] == {}
    status, err = await _apply(api, f"{DB_PATH}/a3", _db("a3", replicas=5), "fieldManager=applier")
    assert status == 409
    assert err["message"] == (
        'Apply failed with 1 conflict: conflict with "creator" using demo.kubewerk.dev/v1: '
        ".spec.replicas"
    )
    status, patched = await api.patch(
        f"{DB_PATH}/a3?fieldManager=editor", {"spec": {"replicas": 4}}
    )
    assert status == 200
    assert ("editor", "Update") in _managers(patched)


async def test_missing_field_manager_cbor_and_force_on_merge_patch(api: Api) -> None:
    await api.post(DB_PATH, database("a4"))
    status, err = await _apply(api, f"{DB_PATH}/a4", _db("a4"), "")
    assert status == 422
    assert err["message"] == (
        'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: '
        "is required for apply patch"
    )
    status, err = await api.request(
        "PATCH",
        f"{DB_PATH}/a4?fieldManager=x",
        raw=b"\xa0",
        content_type="application/apply-patch+cbor",
    )
    assert status == 415 and "CBOR" in err["message"]
    status, err = await api.request(
        "PATCH", f"{DB_PATH}/a4?force=true", raw=b"{}", content_type="application/merge-patch+json"
    )
    assert status == 422
    assert "force: Forbidden: may not be specified for non-apply patch" in err["message"]
    status, err = await _apply(
        api, f"{DB_PATH}/a4", {**_db("a4"), "apiVersion": "demo.kubewerk.dev/v2"}, "fieldManager=x"
    )
    assert status == 400 and err["message"].startswith("Incorrect version specified in apply patch")
    bad = _db("a4")
    bad["metadata"]["managedFields"] = []
    status, err = await _apply(api, f"{DB_PATH}/a4", bad, "fieldManager=x")
    assert status == 400 and err["message"] == "metadata.managedFields must be nil"


async def test_dry_run_apply_stores_nothing(api: Api) -> None:
    status, _ = await _apply(
        api, f"{DB_PATH}/a5", _db("a5", engine="mysql"), "fieldManager=me&dryRun=All"
    )
    assert status == 201
    status, _ = await api.get(f"{DB_PATH}/a5")
    assert status == 404


async def test_managed_fields_reset_with_one_empty_entry_not_with_empty_list(api: Api) -> None:
    status, obj = await api.post(f"{DB_PATH}?fieldManager=c", database("a6"))
    assert obj["metadata"]["managedFields"]
    status, obj = await api.patch(f"{DB_PATH}/a6", {"metadata": {"managedFields": []}})
    assert status == 200 and obj["metadata"]["managedFields"]
    status, obj = await api.patch(f"{DB_PATH}/a6", {"metadata": {"managedFields": [{}]}})
    assert status == 200 and "managedFields" not in obj["metadata"]


async def test_status_subresource_apply_owns_status_only(api: Api) -> None:
    await _apply(api, f"{DB_PATH}/a7", _db("a7", engine="postgres"), "fieldManager=me")
    status_cfg = {**_db("a7"), "status": {"replicas": 2}}
    del status_cfg["spec"]
    status, obj = await _apply(api, f"{DB_PATH}/a7/status", status_cfg, "fieldManager=ctl")
    assert status == 200, obj
    entries = {(e["manager"], e.get("subresource")): e for e in obj["metadata"]["managedFields"]}
    assert entries[("ctl", "status")]["fieldsV1"] == {"f:status": {"f:replicas": {}}}
    assert obj["status"]["replicas"] == 2
    assert entries[("me", None)]["fieldsV1"] == {"f:spec": {"f:engine": {}}}


async def test_builtin_deployment_containers_keyed_by_name(api: Api) -> None:
    dep = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [
                        {"name": "nginx", "image": "nginx:1", "ports": [{"containerPort": 80}]}
                    ]
                },
            },
        },
    }
    status, obj = await _apply(api, f"{DEPLOY_PATH}/web", dep, "fieldManager=kubectl")
    assert status == 201, obj
    fields = obj["metadata"]["managedFields"][0]["fieldsV1"]
    containers = fields["f:spec"]["f:template"]["f:spec"]["f:containers"]
    assert list(containers) == ['k:{"name":"nginx"}']
    assert 'k:{"containerPort":80,"protocol":"TCP"}' in containers['k:{"name":"nginx"}']["f:ports"]
    assert fields["f:spec"]["f:selector"] == {}  # LabelSelector is atomic
    sidecar = {"name": "side", "image": "busybox"}
    other = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"template": {"spec": {"containers": [sidecar]}}},
    }
    status, obj = await _apply(api, f"{DEPLOY_PATH}/web", other, "fieldManager=injector")
    assert status == 200, obj
    names = [c["name"] for c in obj["spec"]["template"]["spec"]["containers"]]
    assert names == ["nginx", "side"]


async def test_last_applied_migration_from_client_side_apply(api: Api) -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "csa"}, "data": {"a": "1"}}
    last = orjson.dumps(cm).decode()
    created = {
        **cm,
        "metadata": {
            "name": "csa",
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": last},
        },
    }
    status, _ = await api.post(f"{CM_PATH}?fieldManager=kubectl-client-side-apply", created)
    assert status == 201
    changed = {**cm, "data": {"a": "2"}}
    # kubectl takes over what its last-applied-configuration set, without a conflict
    status, obj = await _apply(api, f"{CM_PATH}/csa", changed, "fieldManager=kubectl")
    assert status == 200, obj
    assert obj["data"] == {"a": "2"}
    ann = obj["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
    assert orjson.loads(ann)["data"] == {"a": "2"}
    # another manager gets the conflict
    status, _ = await _apply(
        api, f"{CM_PATH}/csa", {**cm, "data": {"a": "3"}}, "fieldManager=other"
    )
    assert status == 409
