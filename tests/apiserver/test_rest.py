"""REST semantics of the embedded API server over real HTTP, checked against Kubernetes'."""

from __future__ import annotations

import asyncio

from kubewerk.apiserver.server import EmbeddedServer
from tests.apiserver.helpers import CRD_PATH, DB_PATH, Api, configmap, database

CM_PATH = "/api/v1/namespaces/default/configmaps"


async def test_create_sets_system_fields(api: Api) -> None:
    status, obj = await api.post(DB_PATH, {**database("a"), "status": {"replicas": 9}})
    assert status == 201, obj
    meta = obj["metadata"]
    assert meta["namespace"] == "default"
    assert meta["generation"] == 1
    assert meta["resourceVersion"].isdigit()
    assert len(meta["uid"]) == 36
    assert meta["creationTimestamp"].endswith("Z")
    # with the status subresource on, create drops status
    assert "status" not in obj


async def test_generate_name(api: Api) -> None:
    body = database("")
    body["metadata"] = {"generateName": "db-"}
    status, obj = await api.post(DB_PATH, body)
    assert status == 201, obj
    name = obj["metadata"]["name"]
    assert name.startswith("db-") and len(name) == 8


async def test_name_or_generate_name_required(api: Api) -> None:
    body = database("")
    body["metadata"] = {}
    status, err = await api.post(DB_PATH, body)
    assert status == 422
    assert err["reason"] == "Invalid"
    assert "metadata.name: Required value: name or generateName is required" in err["message"]


async def test_already_exists_and_not_found_messages(api: Api) -> None:
    assert (await api.post(DB_PATH, database("dup")))[0] == 201
    status, err = await api.post(DB_PATH, database("dup"))
    assert status == 409
    assert err["reason"] == "AlreadyExists"
    assert err["message"] == 'databases.demo.kubewerk.dev "dup" already exists'
    assert err["details"] == {"name": "dup", "group": "demo.kubewerk.dev", "kind": "databases"}
    status, err = await api.get(f"{DB_PATH}/nope")
    assert status == 404
    assert err == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'databases.demo.kubewerk.dev "nope" not found',
        "reason": "NotFound",
        "details": {"name": "nope", "group": "demo.kubewerk.dev", "kind": "databases"},
        "code": 404,
    }
    status, err = await api.get(f"{CM_PATH}/nope")
    assert err["message"] == 'configmaps "nope" not found'


async def test_update_requires_resource_version_for_custom_resources(api: Api) -> None:
    _, obj = await api.post(DB_PATH, database("u"))
    obj["metadata"].pop("resourceVersion")
    status, err = await api.put(f"{DB_PATH}/u", obj)
    assert status == 422
    assert err["message"] == (
        'databases.demo.kubewerk.dev "u" is invalid: metadata.resourceVersion: Invalid value: 0x0: '
        "must be specified for an update"
    )
    assert err["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": "Invalid value: 0x0: must be specified for an update",
            "field": "metadata.resourceVersion",
        }
    ]


async def test_stale_write_conflicts(api: Api) -> None:
    _, obj = await api.post(DB_PATH, database("c"))
    first = dict(obj, spec={"engine": "postgres", "replicas": 2})
    status, _ = await api.put(f"{DB_PATH}/c", first)
    assert status == 200
    stale = dict(obj, spec={"engine": "postgres", "replicas": 3})
    status, err = await api.put(f"{DB_PATH}/c", stale)
    assert status == 409
    assert err["reason"] == "Conflict"
    assert err["message"] == (
        'Operation cannot be fulfilled on databases.demo.kubewerk.dev "c": the object '
        "has been modified; please apply your changes to the latest version and try again"
    )
    # a merge patch carrying a stale resourceVersion conflicts too
    status, err = await api.patch(
        f"{DB_PATH}/c", {"metadata": {"resourceVersion": obj["metadata"]["resourceVersion"]}}
    )
    assert status == 409


async def test_built_ins_allow_unconditional_update(api: Api) -> None:
    status, cm = await api.post(CM_PATH, configmap("cm", {"a": "1"}))
    assert status == 201
    cm["metadata"].pop("resourceVersion")
    cm["data"] = {"a": "2"}
    status, out = await api.put(f"{CM_PATH}/cm", cm)
    assert status == 200, out
    assert out["data"] == {"a": "2"}
    assert "generation" not in out["metadata"]


async def test_generation_tracks_spec_only(api: Api) -> None:
    _, obj = await api.post(DB_PATH, database("g"))
    path = f"{DB_PATH}/g"
    _, obj = await api.patch(path, {"metadata": {"labels": {"x": "y"}}})
    assert obj["metadata"]["generation"] == 1
    _, obj = await api.patch(path, {"spec": {"replicas": 2}})
    assert obj["metadata"]["generation"] == 2
    rv_before = obj["metadata"]["resourceVersion"]
    _, obj = await api.patch(f"{path}/status", {"status": {"replicas": 2}})
    assert obj["metadata"]["generation"] == 2
    assert obj["status"] == {"replicas": 2}
    assert int(obj["metadata"]["resourceVersion"]) > int(rv_before)
    # a no-op patch keeps the resourceVersion
    _, same = await api.patch(path, {"spec": {"replicas": 2}})
    assert same["metadata"]["resourceVersion"] == obj["metadata"]["resourceVersion"]


async def test_status_and_main_endpoints_write_only_their_part(api: Api) -> None:
    _, obj = await api.post(DB_PATH, database("s"))
    path = f"{DB_PATH}/s"
    obj["status"] = {"replicas": 5}
    obj["spec"]["replicas"] = 3
    obj["metadata"]["labels"] = {"via": "status"}
    status, out = await api.put(f"{path}/status", obj)
    assert status == 200, out
    assert out["status"] == {"replicas": 5}
    assert out["spec"]["replicas"] == 1  # spec ignored on /status
    assert "labels" not in out["metadata"]  # so is metadata
    out["status"] = {"replicas": 0}
    out["spec"]["replicas"] = 4
    status, out2 = await api.put(path, out)
    assert status == 200
    assert out2["status"] == {"replicas": 5}  # status ignored on the main endpoint
    assert out2["spec"]["replicas"] == 4


async def test_finalizers_block_deletion_until_removed(api: Api) -> None:
    body = database("f")
    body["metadata"]["finalizers"] = ["demo.kubewerk.dev/cleanup"]
    _, _obj = await api.post(DB_PATH, body)
    path = f"{DB_PATH}/f"
    status, deleting = await api.delete(path)
    assert status == 200
    assert deleting["metadata"]["deletionTimestamp"]
    assert deleting["metadata"]["deletionGracePeriodSeconds"] == 0
    assert deleting["metadata"]["generation"] == 2
    # no new finalizers while deleting
    status, err = await api.patch(
        path, {"metadata": {"finalizers": ["demo.kubewerk.dev/cleanup", "other/x"]}}
    )
    assert status == 422
    assert err["message"] == (
        'Database.demo.kubewerk.dev "f" is invalid: metadata.finalizers: '
        "Forbidden: no new finalizers can be added if the object is "
        'being deleted, found new finalizers []string{"other/x"}'
    )
    # spec can still change while the finalizer holds the object
    assert (await api.get(path))[0] == 200
    status, _gone = await api.patch(path, {"metadata": {"finalizers": None}})
    assert status == 200
    await api.wait_gone(path)


async def test_delete_answers(api: Api) -> None:
    _, obj = await api.post(DB_PATH, database("d"))
    status, body = await api.delete(f"{DB_PATH}/d")
    assert status == 200
    assert body["kind"] == "Status" and body["status"] == "Success"
    assert body["details"] == {
        "name": "d",
        "group": "demo.kubewerk.dev",
        "kind": "databases",
        "uid": obj["metadata"]["uid"],
    }
    # preconditions
    _, obj = await api.post(DB_PATH, database("p"))
    status, err = await api.delete(f"{DB_PATH}/p", {"preconditions": {"uid": "wrong"}})
    assert status == 409
    assert "Precondition failed: UID in precondition: wrong" in err["message"]


async def test_dry_run_writes_nothing(api: Api) -> None:
    status, obj = await api.post(DB_PATH + "?dryRun=All", database("dry"))
    assert status == 201
    assert obj["metadata"]["name"] == "dry"
    assert (await api.get(f"{DB_PATH}/dry"))[0] == 404
    status, _err = await api.post(DB_PATH + "?dryRun=Maybe", database("dry"))
    assert status == 400


async def test_list_pagination_from_one_snapshot(api: Api, aserver: EmbeddedServer) -> None:
    for i in range(25):
        assert (await api.post(DB_PATH, database(f"item-{i:02d}")))[0] == 201
    status, page1 = await api.get(DB_PATH + "?limit=10")
    assert status == 200
    assert [o["metadata"]["name"] for o in page1["items"]] == [f"item-{i:02d}" for i in range(10)]
    token = page1["metadata"]["continue"]
    assert page1["metadata"]["remainingItemCount"] == 15
    # writes after the first page are not seen by later pages
    await api.post(DB_PATH, database("item-99"))
    await api.delete(f"{DB_PATH}/item-15")
    _, page2 = await api.get(DB_PATH + f"?limit=10&continue={token}")
    assert page2["metadata"]["resourceVersion"] == page1["metadata"]["resourceVersion"]
    _, page3 = await api.get(DB_PATH + f"?limit=10&continue={page2['metadata']['continue']}")
    names = [o["metadata"]["name"] for o in page1["items"] + page2["items"] + page3["items"]]
    assert names == [f"item-{i:02d}" for i in range(25)]
    assert "continue" not in page3["metadata"]
    # a compacted token answers 410 Expired
    aserver.store.compact(aserver.store.revision)
    status, err = await api.get(DB_PATH + f"?limit=10&continue={token}")
    assert status == 410
    assert err["reason"] == "Expired"
    status, err = await api.get(DB_PATH + "?limit=10&continue=not-a-token")
    assert status == 400


async def test_label_selectors(api: Api) -> None:
    for name, labels in [("a", {"env": "prod", "tier": "db"}), ("b", {"env": "dev"}), ("c", {})]:
        await api.post(DB_PATH, database(name, labels=labels))

    async def names(selector: str) -> list[str]:
        status, body = await api.get(DB_PATH + "?labelSelector=" + selector)
        assert status == 200, body
        return [o["metadata"]["name"] for o in body["items"]]

    assert await names("env=prod") == ["a"]
    assert await names("env==dev") == ["b"]
    assert await names("env!=prod") == ["b", "c"]
    assert await names("env in (prod,dev)") == ["a", "b"]
    assert await names("env notin (prod)") == ["b", "c"]
    assert await names("tier") == ["a"]
    assert await names("!tier") == ["b", "c"]
    status, err = await api.get(DB_PATH + "?labelSelector=env%20in%20prod")
    assert status == 400 and err["reason"] == "BadRequest"


async def test_field_selectors(api: Api) -> None:
    await api.post(DB_PATH, database("x"))
    await api.post(DB_PATH, database("y"))
    _, body = await api.get(DB_PATH + "?fieldSelector=metadata.name=x")
    assert [o["metadata"]["name"] for o in body["items"]] == ["x"]
    _, body = await api.get(
        "/apis/demo.kubewerk.dev/v1/databases?fieldSelector=metadata.namespace!=default"
    )
    assert body["items"] == []
    status, err = await api.get(DB_PATH + "?fieldSelector=spec.engine=postgres")
    assert status == 400
    status, err = await api.get(CM_PATH + "?fieldSelector=data.x=1")
    assert status == 400
    assert (
        err["message"]
        == '"data.x" is not a known field selector: only "metadata.name", "metadata.namespace"'
    )
    status, err = await api.get("/api/v1/namespaces/default/secrets?fieldSelector=data.x=1")
    assert (status, err["message"]) == (400, "field label not supported: data.x")
    status, body = await api.get("/api/v1/namespaces?fieldSelector=status.phase=Active")
    assert status == 200 and len(body["items"]) == 4
    status, _ = await api.get(
        "/api/v1/namespaces/default/events?fieldSelector=involvedObject.name=x"
    )
    assert status == 200


async def test_namespace_must_exist(api: Api) -> None:
    status, err = await api.post(
        "/apis/demo.kubewerk.dev/v1/namespaces/missing/databases", database("n")
    )
    assert status == 404
    assert err["message"] == 'namespaces "missing" not found'


async def test_body_must_match_endpoint(api: Api) -> None:
    body = database("m")
    body["apiVersion"] = "demo.kubewerk.dev/v2"
    status, err = await api.post(DB_PATH, body)
    assert status == 400
    assert "does not match the expected API version" in err["message"]
    body = database("m")
    body["metadata"]["namespace"] = "kube-system"
    status, err = await api.post(DB_PATH, body)
    assert status == 400
    assert (
        err["message"]
        == "the namespace of the provided object does not match the namespace sent on the request"
    )


async def test_scale_subresource(api: Api) -> None:
    await api.post(DB_PATH, database("sc", replicas=2))
    status, scale = await api.get(f"{DB_PATH}/sc/scale")
    assert status == 200
    assert scale["kind"] == "Scale" and scale["apiVersion"] == "autoscaling/v1"
    assert scale["spec"] == {"replicas": 2}
    status, scale = await api.patch(f"{DB_PATH}/sc/scale", {"spec": {"replicas": 5}})
    assert status == 200, scale
    assert scale["spec"] == {"replicas": 5}
    _, obj = await api.get(f"{DB_PATH}/sc")
    assert obj["spec"]["replicas"] == 5


async def test_patch_types(api: Api) -> None:
    await api.post(DB_PATH, database("pt"))
    path = f"{DB_PATH}/pt"
    status, obj = await api.patch(
        path, [{"op": "add", "path": "/metadata/labels", "value": {"a": "b"}}], kind="json"
    )
    assert status == 200, obj
    assert obj["metadata"]["labels"] == {"a": "b"}
    status, err = await api.patch(path, {"spec": {"replicas": 2}}, kind="strategic")
    assert status == 415
    assert err["reason"] == "UnsupportedMediaType"
    # server-side apply is served; without a fieldManager it is refused as kube refuses it
    status, err = await api.request(
        "PATCH", path, raw=b"x: 1", content_type="application/apply-patch+yaml"
    )
    assert status == 422
    assert err["message"] == (
        'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: '
        "is required for apply patch"
    )


async def test_table_output(api: Api) -> None:
    await api.post(DB_PATH, database("t", replicas=3))
    await api.patch(
        f"{DB_PATH}/t/status", {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    )
    accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
    status, tbl = await api.get(DB_PATH, headers={"Accept": accept})
    assert status == 200
    assert tbl["kind"] == "Table"
    assert [c["name"] for c in tbl["columnDefinitions"]] == [
        "Name",
        "Engine",
        "Replicas",
        "Ready",
        "Age",
    ]
    cells = tbl["rows"][0]["cells"]
    assert cells[:4] == ["t", "postgres", 3, "True"]
    assert cells[4].endswith("s")
    assert tbl["rows"][0]["object"]["kind"] == "PartialObjectMetadata"
    status, tbl = await api.get("/api/v1/namespaces", headers={"Accept": accept})
    assert [c["name"] for c in tbl["columnDefinitions"]] == ["Name", "Status", "Age"]
    assert tbl["rows"][0]["cells"][:2] == ["default", "Active"]


async def test_discovery(api: Api) -> None:
    _, groups = await api.get("/apis")
    names = [g["name"] for g in groups["groups"]]
    assert "demo.kubewerk.dev" in names and "apiextensions.k8s.io" in names
    _, res = await api.get("/apis/demo.kubewerk.dev/v1")
    by_name = {r["name"]: r for r in res["resources"]}
    assert by_name["databases"]["shortNames"] == ["db"]
    assert by_name["databases"]["namespaced"] is True
    assert "databases/status" in by_name and "databases/scale" in by_name
    accept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
    async with api.session.get(api.base + "/apis", headers={"Accept": accept}) as resp:
        assert (
            resp.headers["Content-Type"]
            == "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
        )
        agg = await resp.json(content_type=None)
    demo = next(i for i in agg["items"] if i["metadata"]["name"] == "demo.kubewerk.dev")
    resource = demo["versions"][0]["resources"][0]
    assert resource["resource"] == "databases" and resource["scope"] == "Namespaced"
    assert {s["subresource"] for s in resource["subresources"]} == {"status", "scale"}
    _, version = await api.get("/version")
    assert version["major"] == "1"


async def test_openapi_v3(api: Api) -> None:
    _, index = await api.get("/openapi/v3")
    assert "apis/demo.kubewerk.dev/v1" in index["paths"]
    keys = list(index["paths"])  # kube writes a Go map: keys in byte order
    assert keys == sorted(keys, key=str.encode) and keys[:2] == ["api", "api/v1"] and len(keys) > 10
    url = index["paths"]["apis/demo.kubewerk.dev/v1"]["serverRelativeURL"]
    _, doc = await api.get(url)
    schema = doc["components"]["schemas"]["dev.kubewerk.demo.v1.Database"]
    assert schema["x-kubernetes-group-version-kind"] == [
        {"group": "demo.kubewerk.dev", "kind": "Database", "version": "v1"}
    ]
    patch_op = doc["paths"]["/apis/demo.kubewerk.dev/v1/namespaces/{namespace}/databases/{name}"][
        "patch"
    ]
    assert any(p["name"] == "fieldValidation" for p in patch_op["parameters"])
    status, swagger = await api.get("/openapi/v2")
    assert status == 200 and swagger["swagger"] == "2.0"
    v2 = swagger["definitions"]["dev.kubewerk.demo.v1.Database"]
    assert v2["x-kubernetes-group-version-kind"] == schema["x-kubernetes-group-version-kind"]


async def test_crd_status_and_versions(api: Api) -> None:
    status, crd = await api.get(f"{CRD_PATH}/databases.demo.kubewerk.dev")
    conds = {c["type"]: c for c in crd["status"]["conditions"]}
    assert conds["NamesAccepted"]["reason"] == "NoConflicts"
    assert conds["NamesAccepted"]["message"] == "no conflicts found"
    assert conds["Established"]["reason"] == "InitialNamesAccepted"
    assert conds["Established"]["message"] == "the initial names have been accepted"
    assert crd["status"]["storedVersions"] == ["v1"]
    assert crd["status"]["acceptedNames"]["kind"] == "Database"
    # add a served v1beta1: objects are served in either version (conversion None)
    crd["spec"]["versions"].append(
        {**crd["spec"]["versions"][0], "name": "v1beta1", "storage": False}
    )
    status, crd = await api.put(f"{CRD_PATH}/databases.demo.kubewerk.dev", crd)
    assert status == 200, crd
    assert crd["metadata"]["generation"] == 2
    await api.post(DB_PATH, database("v"))
    for _ in range(100):
        status, obj = await api.get(
            "/apis/demo.kubewerk.dev/v1beta1/namespaces/default/databases/v"
        )
        if status == 200:
            break
    assert obj["apiVersion"] == "demo.kubewerk.dev/v1beta1"
    body = database("w")
    body["apiVersion"] = "demo.kubewerk.dev/v1beta1"
    status, created = await api.post(
        "/apis/demo.kubewerk.dev/v1beta1/namespaces/default/databases", body
    )
    assert status == 201, created
    _, stored = await api.get(f"{DB_PATH}/w")
    assert stored["apiVersion"] == "demo.kubewerk.dev/v1"


async def test_deleting_a_crd_removes_its_objects_and_endpoints(api: Api) -> None:
    await api.post(DB_PATH, database("doomed"))
    status, _crd = await api.delete(f"{CRD_PATH}/databases.demo.kubewerk.dev")
    assert status == 200
    await api.wait_gone(f"{CRD_PATH}/databases.demo.kubewerk.dev")
    status, _ = await api.get(DB_PATH)
    assert status == 404
    # re-created: empty
    await api.install_demo_crd()
    _, body = await api.get(DB_PATH)
    assert body["items"] == []


async def test_namespace_deletion(api: Api) -> None:
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}}
    status, created = await api.post("/api/v1/namespaces", ns)
    assert status == 201
    assert created["status"] == {"phase": "Active"}
    assert created["spec"] == {"finalizers": ["kubernetes"]}
    ns_db = "/apis/demo.kubewerk.dev/v1/namespaces/team-a/databases"
    held = database("held")
    held["metadata"]["finalizers"] = ["demo.kubewerk.dev/hold"]
    await api.post(ns_db, held)
    await api.post("/api/v1/namespaces/team-a/configmaps", configmap("c"))
    status, deleting = await api.delete("/api/v1/namespaces/team-a")
    assert status == 200
    assert deleting["status"]["phase"] == "Terminating"
    status, err = await api.post("/api/v1/namespaces/team-a/configmaps", configmap("late"))
    assert status == 403
    assert err["message"] == (
        'configmaps "late" is forbidden: unable to create new '
        "content in namespace team-a because it is being terminated"
    )
    await api.wait_gone("/api/v1/namespaces/team-a/configmaps/c")
    # the finalizer holds the namespace
    status, ns_now = await api.get("/api/v1/namespaces/team-a")
    assert status == 200 and ns_now["status"]["phase"] == "Terminating"
    await api.patch(f"{ns_db}/held", {"metadata": {"finalizers": None}})
    await api.wait_gone("/api/v1/namespaces/team-a")


async def test_restart_keeps_objects_revisions_and_crds(tmp_path: object) -> None:
    from pathlib import Path

    db = Path(str(tmp_path)) / "store.db"
    async with EmbeddedServer(f"sqlite:{db}") as srv:
        client = Api(srv.url)
        await client.install_demo_crd()
        _, obj = await client.post(DB_PATH, database("persist"))
        await client.close()
    async with EmbeddedServer(f"sqlite:{db}") as srv:
        client = Api(srv.url)
        status, again = await client.get(f"{DB_PATH}/persist")
        assert status == 200, again
        assert again["metadata"]["uid"] == obj["metadata"]["uid"]
        _, cm = await client.post(CM_PATH, configmap("after"))
        assert int(cm["metadata"]["resourceVersion"]) > int(obj["metadata"]["resourceVersion"])
        await client.close()


async def test_unknown_fields_follow_field_validation(api: Api) -> None:
    body = configmap("u1", {"a": "1"})
    body["extra"] = True
    status, err = await api.post(CM_PATH + "?fieldValidation=Strict", body)
    assert (status, err["message"]) == (400, 'strict decoding error: unknown field "extra"')
    async with api.session.post(api.base + CM_PATH, json=body) as resp:  # default: Warn
        assert resp.status == 201
        assert resp.headers.getall("Warning") == ['299 - "unknown field \\"extra\\""']
        assert "extra" not in await resp.json()
    crd_body = database("u2")
    crd_body["spec"]["color"] = "red"
    status, err = await api.post(DB_PATH + "?fieldValidation=Strict", crd_body)
    assert (status, err["message"]) == (400, 'strict decoding error: unknown field "spec.color"')
    status, obj = await api.post(DB_PATH + "?fieldValidation=Ignore", crd_body)
    assert status == 201 and "color" not in obj["spec"]
    status, err = await api.post(CM_PATH, configmap("u3", {"a": 1}))  # type: ignore[dict-item]
    assert status == 400
    assert err["message"] == (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: '
        "json: cannot unmarshal number into Go struct field ConfigMap.data of type string"
    )


async def test_schema_validation_and_defaults(api: Api) -> None:
    status, obj = await api.post(DB_PATH, database("def", replicas=None))
    assert status == 201
    assert obj["spec"]["replicas"] == 1 and obj["spec"]["storage"] == "1Gi"
    status, err = await api.post(DB_PATH, database("bad", engine="oracle", replicas=30))
    assert status == 422
    assert err["message"].startswith(
        'Database.demo.kubewerk.dev "bad" is invalid: [spec.engine: Unsupported value: "oracle"'
    )
    causes = {(c["field"], c["reason"]) for c in err["details"]["causes"]}
    assert ("spec.engine", "FieldValueNotSupported") in causes
    assert ("spec.replicas", "FieldValueInvalid") in causes
    status, err = await api.post(DB_PATH, database("cel", engine="mysql", replicas=5))
    assert status == 422
    assert err["message"] == (
        'Database.demo.kubewerk.dev "cel" is invalid: spec: '
        'Invalid value: "object": mysql supports at most 3 replicas'
    )
    # the same rules run on patches and status writes
    await api.post(DB_PATH, database("p"))
    status, err = await api.patch(f"{DB_PATH}/p", {"spec": {"replicas": 0}})
    assert status == 422
    status, err = await api.patch(f"{DB_PATH}/p/status", {"status": {"replicas": "many"}})
    assert status == 422
    assert err["details"]["causes"][0]["field"] == "status.replicas"


async def test_events_share_storage_between_core_and_events_api(api: Api) -> None:
    new_ev = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "db.1"},
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "regarding": {
            "apiVersion": "demo.kubewerk.dev/v1",
            "kind": "Database",
            "name": "orders",
            "namespace": "default",
        },
        "reason": "Provisioned",
        "note": "ready to serve",
        "type": "Normal",
        "action": "Provision",
        "reportingController": "demo.kubewerk.dev/operator",
        "reportingInstance": "op-1",
    }
    status, created = await api.post("/apis/events.k8s.io/v1/namespaces/default/events", new_ev)
    assert status == 201, created
    assert created["note"] == "ready to serve" and created["apiVersion"] == "events.k8s.io/v1"
    status, core = await api.get("/api/v1/namespaces/default/events/db.1")
    assert status == 200
    assert core["message"] == "ready to serve"
    assert core["involvedObject"]["name"] == "orders"
    assert core["reportingComponent"] == "demo.kubewerk.dev/operator"
    _, listed = await api.get(
        "/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3Dorders"
    )
    assert [e["metadata"]["name"] for e in listed["items"]] == ["db.1"]
    _, listed = await api.get(
        "/apis/events.k8s.io/v1/namespaces/default/events?fieldSelector=regarding.name%3Dorders"
    )
    assert [e["note"] for e in listed["items"]] == ["ready to serve"]


async def test_delete_collection_with_selector(api: Api) -> None:
    for name, env in [("a", "dev"), ("b", "dev"), ("c", "prod")]:
        await api.post(DB_PATH, database(name, labels={"env": env}))
    status, body = await api.delete(DB_PATH + "?labelSelector=env%3Ddev")
    assert status == 200
    assert body["kind"] == "DatabaseList"
    assert sorted(o["metadata"]["name"] for o in body["items"]) == ["a", "b"]
    _, left = await api.get(DB_PATH)
    assert [o["metadata"]["name"] for o in left["items"]] == ["c"]


async def test_strategic_merge_patch_on_built_ins(api: Api) -> None:
    cm = configmap("smp", {"a": "1"}, finalizers=["x.io/one"])
    await api.post(CM_PATH, cm)
    status, out = await api.patch(
        f"{CM_PATH}/smp",
        {"data": {"b": "2"}, "metadata": {"finalizers": ["x.io/two"]}},
        kind="strategic",
    )
    assert status == 200, out
    assert out["data"] == {"a": "1", "b": "2"}
    # finalizers merge (patchStrategy: merge) instead of being replaced; patch items first
    assert out["metadata"]["finalizers"] == ["x.io/two", "x.io/one"]
    status, out = await api.patch(
        f"{CM_PATH}/smp",
        {"metadata": {"$deleteFromPrimitiveList/finalizers": ["x.io/one"]}},
        kind="strategic",
    )
    assert status == 200, out
    assert out["metadata"]["finalizers"] == ["x.io/two"]


async def test_deprecated_versions_warn(api: Api) -> None:
    _, crd = await api.get(f"{CRD_PATH}/databases.demo.kubewerk.dev")
    v1 = crd["spec"]["versions"][0]
    crd["spec"]["versions"] = [
        v1,
        {**v1, "name": "v1beta1", "storage": False, "deprecated": True},
        {
            **v1,
            "name": "v1alpha1",
            "storage": False,
            "deprecated": True,
            "deprecationWarning": "v1alpha1 is going away",
        },
    ]
    status, body = await api.put(f"{CRD_PATH}/databases.demo.kubewerk.dev", crd)
    assert status == 200, body
    for _ in range(100):
        async with api.session.get(
            api.base + "/apis/demo.kubewerk.dev/v1beta1/namespaces/default/databases"
        ) as resp:
            if resp.status == 200:
                assert resp.headers.getall("Warning") == [
                    '299 - "demo.kubewerk.dev/v1beta1 Database is '
                    'deprecated; use demo.kubewerk.dev/v1 Database"'
                ]
                break
    async with api.session.get(
        api.base + "/apis/demo.kubewerk.dev/v1alpha1/namespaces/default/databases"
    ) as resp:
        assert resp.headers.getall("Warning") == ['299 - "v1alpha1 is going away"']
    async with api.session.get(api.base + DB_PATH) as resp:
        assert "Warning" not in resp.headers


async def test_namespace_termination_conditions_and_default_service_account(api: Api) -> None:
    await api.post(
        "/api/v1/namespaces",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-b"}},
    )
    for _ in range(200):
        status, _ = await api.get("/api/v1/namespaces/team-b/serviceaccounts/default")
        if status == 200:
            break
        await asyncio.sleep(0.01)
    assert status == 200
    held = configmap("held", finalizers=["x.io/hold"])
    await api.post("/api/v1/namespaces/team-b/configmaps", held)
    await api.delete("/api/v1/namespaces/team-b")
    for _ in range(200):
        _, ns = await api.get("/api/v1/namespaces/team-b")
        conds = {c["type"]: c for c in ns["status"].get("conditions") or []}
        if conds.get("NamespaceFinalizersRemaining", {}).get("status") == "True":
            break
        await asyncio.sleep(0.01)
    assert conds["NamespaceContentRemaining"]["message"] == (
        "Some resources are remaining: configmaps has 1 resource instances"
    )
    assert conds["NamespaceFinalizersRemaining"]["message"] == (
        "Some content in the namespace has finalizers remaining: x.io/hold in 1 resource instances"
    )
    await api.patch("/api/v1/namespaces/team-b/configmaps/held", {"metadata": {"finalizers": None}})
    await api.wait_gone("/api/v1/namespaces/team-b")


async def test_namespace_finalize_writes_spec_finalizers_only(api: Api) -> None:
    ns_path = "/api/v1/namespaces/team-f"
    status, ns = await api.post(
        "/api/v1/namespaces",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-f"}},
    )
    assert status == 201, ns
    assert ns["spec"] == {"finalizers": ["kubernetes"]} and ns["status"] == {"phase": "Active"}
    assert ns["metadata"]["labels"] == {"kubernetes.io/metadata.name": "team-f"}
    body = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "team-f", "labels": {"a": "b"}},
        "spec": {"finalizers": ["kubernetes", "x.io/hold"]},
        "status": {"phase": "Terminating"},
    }
    status, out = await api.put(f"{ns_path}/finalize", body)
    assert status == 200, out
    assert out["spec"] == {"finalizers": ["kubernetes", "x.io/hold"]}
    assert out["status"] == {"phase": "Active"}
    assert out["metadata"]["labels"] == {"kubernetes.io/metadata.name": "team-f"}
    assert int(out["metadata"]["resourceVersion"]) > int(ns["metadata"]["resourceVersion"])
    # deleting: the namespace controller removes "kubernetes", the other finalizer holds it
    status, out = await api.delete(ns_path)
    assert status == 200 and out["status"]["phase"] == "Terminating", out
    for _ in range(200):
        _, ns = await api.get(ns_path)
        if ns["spec"] == {"finalizers": ["x.io/hold"]}:
            break
        await asyncio.sleep(0.01)
    assert ns["spec"] == {"finalizers": ["x.io/hold"]}
    # finalizing with none left completes the deletion
    status, out = await api.put(
        f"{ns_path}/finalize",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-f"}, "spec": {}},
    )
    assert status == 200, out
    assert (await api.get(ns_path))[0] == 404
    status, out = await api.put(
        "/api/v1/namespaces/nowhere/finalize",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "nowhere"}},
    )
    assert status == 404 and out["details"] == {"name": "nowhere", "kind": "namespaces"}, out
    status, _ = await api.put("/api/v1/namespaces/default/configmaps/x/finalize", configmap("x"))
    assert status == 404


async def test_initial_namespaces(api: Api) -> None:
    for name in ("default", "kube-system", "kube-public", "kube-node-lease"):
        status, ns = await api.get(f"/api/v1/namespaces/{name}")
        assert status == 200, ns
        assert list(ns) == ["apiVersion", "kind", "metadata", "spec", "status"]
        assert list(ns["metadata"]) == [
            "name",
            "uid",
            "creationTimestamp",
            "labels",
            "managedFields",  # the server's own create, an Update entry
            "resourceVersion",
        ]
        assert ns["metadata"]["labels"] == {"kubernetes.io/metadata.name": name}
        assert ns["spec"] == {"finalizers": ["kubernetes"]} and ns["status"] == {"phase": "Active"}


async def test_watch_ends_when_its_crd_is_deleted(api: Api) -> None:
    async def delete_crd() -> None:
        await asyncio.sleep(0.2)
        await api.delete(f"{CRD_PATH}/databases.demo.kubewerk.dev")

    task = asyncio.create_task(delete_crd())
    loop = asyncio.get_running_loop()
    start = loop.time()
    events = await api.watch(DB_PATH + "?watch=1", stop_after=100, timeout=10)
    await task
    assert events == []
    assert loop.time() - start < 5


async def test_defaults_apply_on_read_after_the_schema_changes(api: Api) -> None:
    await api.post(DB_PATH, database("old"))
    _, crd = await api.get(f"{CRD_PATH}/databases.demo.kubewerk.dev")
    spec_props = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"][
        "properties"
    ]
    spec_props["backup"] = {"type": "string", "default": "daily"}
    status, body = await api.put(f"{CRD_PATH}/databases.demo.kubewerk.dev", crd)
    assert status == 200, body
    for _ in range(200):
        _, obj = await api.get(f"{DB_PATH}/old")
        if obj["spec"].get("backup") == "daily":
            break
        await asyncio.sleep(0.01)
    assert obj["spec"]["backup"] == "daily"  # defaulted when read, as from etcd
    _, listed = await api.get(DB_PATH)
    assert listed["items"][0]["spec"]["backup"] == "daily"


async def test_read_only_paths_and_resource_version_parameters(api: Api) -> None:
    for path in ("/version", "/apis", "/api/v1", "/openapi/v3", "/healthz"):
        status, err = await api.post(path, {})
        assert (status, err["reason"]) == (405, "MethodNotAllowed"), path
    await api.post(DB_PATH, database("rv"))
    for bad in ("-1", "1_0", "abc"):
        status, err = await api.get(f"{DB_PATH}?resourceVersion={bad}")
        assert status == 400, bad
        status, err = await api.get(f"{DB_PATH}/rv?resourceVersion={bad}")
        assert status == 400, bad
    status, err = await api.get(f"{DB_PATH}/rv?resourceVersion=999999")
    assert (status, err["reason"]) == (504, "Timeout")
    assert err["message"].startswith("Too large resource version: 999999, current: ")
    status, _ = await api.get(f"{DB_PATH}/rv?resourceVersion=0")
    assert status == 200


async def test_unknown_metadata_fields_of_built_ins_are_dropped(api: Api) -> None:
    body = configmap("meta-extra")
    body["metadata"]["colour"] = "red"
    status, err = await api.post(CM_PATH + "?fieldValidation=Strict", body)
    assert (status, err["message"]) == (
        400,
        'strict decoding error: unknown field "metadata.colour"',
    )
    status, obj = await api.post(CM_PATH, body)
    assert status == 201 and "colour" not in obj["metadata"]
