"""The server's fast paths answer exactly what the full paths answer.

Two in-process servers get the same random sequence of requests: one as it runs, one
with the read cache and the trusted-update skip switched off. Every answer (status,
body, Warning headers) must be the same, but for the uid each server draws.
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import orjson
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kubewerk.apiserver.app import ApiServer
from kubewerk.apiserver.storage import open_store
from tests.apiserver.helpers import DEMO_CRD, asgi_call

JSON = dict[str, Any]
CRD_NAME = "databases.demo.kubewerk.dev"
CRD_PATH = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{CRD_NAME}"
BASE = "/apis/demo.kubewerk.dev/v1/namespaces/default/databases"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


async def call(
    app: ApiServer,
    method: str,
    path: str,
    body: Any = None,
    ctype: str = "application/json",
    accept: str | None = None,
) -> tuple[int, list[str], Any]:
    """Status, Warning headers and decoded body of one request straight into ``app``."""
    path, _, query = path.partition("?")
    headers = {"content-type": ctype, "accept": accept or ""}
    status, resp_headers, payload = await asgi_call(
        app, method, path, query, headers, b"" if body is None else orjson.dumps(body)
    )
    return (
        status,
        [v for k, v in resp_headers if k == "warning"],
        orjson.loads(payload) if payload else None,
    )


def normalised(value: Any) -> Any:
    """The answer without what differs by chance between two servers (uids, clock)."""
    if isinstance(value, dict):
        if "fieldsType" in value and "time" in value:  # a managedFields entry: clock-stamped
            # (with or without a manager: a request without a User-Agent has none)
            value = {**value, "time": "<x>"}
        return {
            k: ("<x>" if k in ("uid", "creationTimestamp", "lastTransitionTime") else normalised(v))
            for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [normalised(v) for v in value]
    if isinstance(value, str) and len(value) == 36 and value.count("-") == 4:
        return "<uid>"
    return value


async def established(app: ApiServer, generation: int) -> None:
    for _ in range(500):
        _, _, crd = await call(app, "GET", CRD_PATH)
        rtype = app.registry.get("demo.kubewerk.dev", "databases")
        conditions = (crd.get("status") or {}).get("conditions") or []
        if (
            rtype is not None
            and rtype.crd_generation >= generation
            and any(c["type"] == "Established" and c["status"] == "True" for c in conditions)
        ):
            return
        await asyncio.sleep(0.005)
    raise AssertionError("CRD not established")


NAMES = st.sampled_from(["a", "b", "c"])
SPEC = st.fixed_dictionaries(
    {"engine": st.sampled_from(["postgres", "mysql", "oracle"])},
    optional={
        "replicas": st.sampled_from([1, 3, 5, 3.0, True, -1, "x"]),
        "storage": st.sampled_from(["1Gi", "10Gi", "lots"]),
    },
)
STATUS = st.fixed_dictionaries(
    {},
    optional={
        "replicas": st.sampled_from([0, 2, "two"]),
        "conditions": st.sampled_from(
            [
                [{"type": "Ready", "status": "True"}],
                [{"type": "Ready", "status": "True"}, {"type": "Ready", "status": "False"}],
                [{"status": "True"}],
            ]
        ),
        "extra": st.just(1),
    },
)
CRD_CHANGES = st.sampled_from(
    ["default-storage", "rule-on-spec", "transition-rule", "must-change", "root-rule"]
)

OPS = st.one_of(
    st.tuples(st.just("create"), NAMES, SPEC),
    st.tuples(st.just("get"), NAMES, st.booleans()),
    st.tuples(st.just("patch-spec"), NAMES, SPEC),
    st.tuples(st.just("patch-status"), NAMES, STATUS),
    st.tuples(st.just("put-status"), NAMES, STATUS),
    st.tuples(st.just("label"), NAMES, st.sampled_from(["x", "y", None])),
    st.tuples(st.just("delete"), NAMES, st.just(None)),
    st.tuples(st.just("crd"), CRD_CHANGES, st.just(None)),
)


def changed_crd(crd: JSON, change: str) -> JSON:
    crd = copy.deepcopy(crd)
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    spec = schema["properties"]["spec"]
    if change == "default-storage":
        spec["properties"]["storage"]["default"] = "5Gi"
    elif change == "rule-on-spec":
        spec.setdefault("x-kubernetes-validations", []).append({"rule": "self.engine != 'oracle'"})
    elif change == "transition-rule":
        spec.setdefault("x-kubernetes-validations", []).append(
            {
                "rule": "!has(oldSelf.replicas) || !has(self.replicas) "
                "|| self.replicas >= oldSelf.replicas",
                "message": "replicas may not shrink",
            }
        )
    elif change == "must-change":
        # fails on every update that leaves storage alone, status writes included
        spec.setdefault("x-kubernetes-validations", []).append(
            {
                "rule": "!has(oldSelf.storage) || self.storage != oldSelf.storage",
                "message": "storage must change",
            }
        )
    else:
        schema["x-kubernetes-validations"] = [
            {
                "rule": "!has(self.status) || !has(self.status.replicas) || "
                "!has(self.spec.replicas) || self.status.replicas <= self.spec.replicas"
            }
        ]
    return crd


async def run(ops: list[tuple[str, Any, Any]]) -> None:
    fast = ApiServer(open_store("memory"))
    full = ApiServer(open_store("memory"))
    full.reads.enabled = False
    full.admission._for_update = lambda rtype, version, compiled, obj, old: compiled  # type: ignore[attr-defined]
    servers = (fast, full)
    crd = yaml.safe_load(DEMO_CRD.read_text())
    for app in servers:
        status, _, body = await call(
            app, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd
        )
        assert status == 201, body
        await established(app, 1)
    try:
        for op, name, arg in ops:
            answers = []
            if op == "crd":
                for app in servers:
                    _, _, current = await call(app, "GET", CRD_PATH)
                    current = changed_crd(current, name)
                    status, _, out = await call(app, "PUT", CRD_PATH, current)
                    if status == 200:
                        await established(app, out["metadata"]["generation"])
                    answers.append(
                        (status, out["metadata"]["generation"] if status == 200 else out)
                    )
                assert answers[0] == answers[1]
                continue
            for app in servers:
                path = f"{BASE}/{name}"
                if op == "create":
                    answer = await call(
                        app,
                        "POST",
                        BASE,
                        {
                            "apiVersion": "demo.kubewerk.dev/v1",
                            "kind": "Database",
                            "metadata": {"name": name},
                            "spec": arg,
                        },
                    )
                elif op == "get":
                    answer = await call(app, "GET", path, accept=TABLE if arg else None)
                elif op == "patch-spec":
                    answer = await call(
                        app, "PATCH", path, {"spec": arg}, "application/merge-patch+json"
                    )
                elif op == "patch-status":
                    answer = await call(
                        app,
                        "PATCH",
                        path + "/status",
                        {"status": arg, "spec": {"replicas": 2.0}},
                        "application/merge-patch+json",
                    )
                elif op == "put-status":
                    _, _, current = await call(app, "GET", path)
                    if isinstance(current, dict) and current.get("kind") == "Database":
                        current["status"] = arg
                        answer = await call(app, "PUT", path + "/status", current)
                    else:
                        answer = (0, [], None)
                elif op == "label":
                    answer = await call(
                        app,
                        "PATCH",
                        path,
                        {"metadata": {"labels": {"tier": arg}}},
                        "application/merge-patch+json",
                    )
                else:
                    answer = await call(app, "DELETE", path)
                answers.append(normalised(answer))
            assert answers[0] == answers[1], (op, name, arg)
            # and a plain GET after every step (served from the cache when it can be)
            gets = [normalised(await call(app, "GET", f"{BASE}/{name}")) for app in servers]
            assert gets[0] == gets[1]
    finally:
        for app in servers:
            await app.stop()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(OPS, min_size=1, max_size=25))
# a transition rule that fails on unchanged values, on an object written under it
@example(
    [
        ("create", "a", {"engine": "postgres", "storage": "1Gi"}),
        ("crd", "must-change", None),
        ("patch-spec", "a", {"engine": "postgres", "storage": "10Gi"}),
        ("patch-status", "a", {"replicas": 0}),
    ]
)
# a value equal in Python but not in JSON (True == 1) is still validated
@example(
    [
        ("create", "a", {"engine": "postgres", "replicas": 1}),
        ("patch-status", "a", {"replicas": 0}),
        ("patch-spec", "a", {"engine": "postgres", "replicas": True}),
    ]
)
# a root rule across spec and status, and a cached GET across a schema change
@example(
    [
        ("create", "b", {"engine": "mysql", "replicas": 1}),
        ("get", "b", False),
        ("crd", "root-rule", None),
        ("label", "b", "x"),
        ("patch-status", "b", {"replicas": 2}),
        ("crd", "default-storage", None),
        ("get", "b", False),
        ("put-status", "b", {"replicas": 0}),
    ]
)
def test_fast_paths_answer_as_the_full_paths(ops: list[tuple[str, Any, Any]]) -> None:
    asyncio.run(run(ops))
