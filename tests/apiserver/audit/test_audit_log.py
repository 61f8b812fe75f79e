"""The audit log against a live embedded server: lines for every verb at each level, the
fields kube-apiserver writes, spec patches with trace ids, and a spec history replayed to
every past version equal to what the server answered at that version."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from kubewerk.apiserver.audit import Auditor, LogWriter, parse_policy
from kubewerk.apiserver.audit.history import (
    HistoryError,
    parse_target,
    read_history,
    replay,
    version_at,
)
from kubewerk.apiserver.server import EmbeddedServer
from tests.apiserver.helpers import DB_PATH, Api, database

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
TRACEPARENT = f"00-{TRACE}-00f067aa0ba902b7-01"


def policy(*rules: dict[str, Any], **top: Any) -> dict[str, Any]:
    doc = {"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "rules": list(rules), **top}
    parse_policy(doc)  # valid
    return doc


class Audited:
    def __init__(self, server: EmbeddedServer, auditor: Auditor, log: Path, api: Api) -> None:
        self.server, self.auditor, self.log, self.api = server, auditor, log, api

    def events(self) -> list[dict[str, Any]]:
        writer = self.auditor.sink
        assert isinstance(writer, LogWriter)
        writer.flush()
        return [orjson.loads(line) for line in self.log.read_bytes().splitlines() if line]


async def start(tmp_path: Path, pol: dict[str, Any]) -> tuple[EmbeddedServer, Auditor, Path]:
    log = tmp_path / "audit" / "audit.log"
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text(yaml.safe_dump(pol))
    server = EmbeddedServer(audit_policy_file=policy_file, audit_log_path=log)
    await server.start()
    assert server.auditor is not None
    return server, server.auditor, log


@pytest.fixture
async def audited(tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[Audited]:
    pol = getattr(request, "param", None) or policy({"level": "RequestResponse"})
    server, auditor, log = await start(tmp_path, pol)
    api = Api(server.url)
    await api.install_demo_crd()
    try:
        yield Audited(server, auditor, log, api)
    finally:
        await api.close()
        await server.stop()


async def every_verb(api: Api) -> dict[str, str]:
    """One request of each verb on a custom resource; returns verb -> request URI."""
    hdrs = {"traceparent": TRACEPARENT, "User-Agent": "audit-test/1.0"}
    s, _ = await api.post(DB_PATH, database("db1"), headers=hdrs)
    assert s == 201
    s, _ = await api.get(f"{DB_PATH}/db1")
    assert s == 200
    s, _ = await api.get(DB_PATH)
    assert s == 200
    events = await api.watch(f"{DB_PATH}?watch=true&timeoutSeconds=1", stop_after=1)
    assert events
    s, got = await api.get(f"{DB_PATH}/db1")
    got["spec"]["replicas"] = 2
    s, _ = await api.put(f"{DB_PATH}/db1", got, headers=hdrs)
    assert s == 200
    s, _ = await api.patch(f"{DB_PATH}/db1", {"spec": {"replicas": 3}}, headers=hdrs)
    assert s == 200
    s, _ = await api.delete(f"{DB_PATH}/db1", headers=hdrs)
    assert s == 200
    s, _ = await api.post(DB_PATH, database("db2"))
    assert s == 201
    s, _ = await api.delete(DB_PATH)
    assert s == 200
    return {
        "create": DB_PATH,
        "get": f"{DB_PATH}/db1",
        "list": DB_PATH,
        "watch": f"{DB_PATH}?watch=true&timeoutSeconds=1",
        "update": f"{DB_PATH}/db1",
        "patch": f"{DB_PATH}/db1",
        "delete": f"{DB_PATH}/db1",
        "deletecollection": DB_PATH,
    }


@pytest.mark.parametrize("level", ["None", "Metadata", "Request", "RequestResponse"])
async def test_lines_for_every_verb_at_each_level(tmp_path: Path, level: str) -> None:
    pol = policy(
        {"level": level, "resources": [{"group": "demo.kubewerk.dev", "resources": ["databases"]}]},
        {"level": "None"},
    )
    server, _auditor, log = await start(tmp_path, pol)
    api = Api(server.url)
    try:
        await api.install_demo_crd()
        uris = await every_verb(api)
    finally:
        await api.close()
        await server.stop()
    events = [orjson.loads(line) for line in log.read_bytes().splitlines()]
    assert log.stat().st_mode & 0o777 == 0o600
    if level == "None":
        assert events == []
        return
    assert {e["level"] for e in events} == {level}
    by_verb: dict[str, list[dict[str, Any]]] = {}
    for e in events:
        by_verb.setdefault(e["verb"], []).append(e)
    assert set(by_verb) == set(uris)
    for verb, evs in by_verb.items():
        stages = [e["stage"] for e in evs]
        expected = ["RequestReceived", "ResponseStarted", "ResponseComplete"]
        if verb != "watch":
            expected = ["RequestReceived", "ResponseComplete"]
        requests = 2 if verb in ("create", "get") else 1  # see every_verb
        assert stages == expected * requests, (verb, stages)
        for e in evs:
            assert e["kind"] == "Event" and e["apiVersion"] == "audit.k8s.io/v1"
            assert e["requestURI"] in (uris[verb], DB_PATH, f"{DB_PATH}/db1")
            # the server's user when authentication is off (whatever auth.types names it)
            assert e["user"]["username"] and e["user"] == events[0]["user"]
            assert e["sourceIPs"] == ["127.0.0.1"]
            ref = e["objectRef"]
            assert ref["resource"] == "databases" and ref["namespace"] == "default"
            assert ref["apiGroup"] == "demo.kubewerk.dev" and ref["apiVersion"] == "v1"
            assert e["requestReceivedTimestamp"].endswith("Z")
            assert len(e["stageTimestamp"]) == len("2024-01-01T00:00:00.000000Z")
            assert e["stageTimestamp"] >= e["requestReceivedTimestamp"]
            complete = e["stage"] == "ResponseComplete"
            assert ("responseStatus" in e) == (e["stage"] != "RequestReceived")
            has_body = verb in ("create", "update", "patch")
            assert ("requestObject" in e) == (has_body and level != "Metadata"), (verb, e)
            wants_response = complete and level == "RequestResponse" and verb != "watch"
            assert ("responseObject" in e) == wants_response, (verb, e)
        done = [e for e in evs if e["stage"] == "ResponseComplete"]
        assert all(e["responseStatus"]["code"] in (200, 201) for e in done)
    ids = {e["auditID"] for e in events}
    assert len(ids) == sum(
        1 for e in events if e["stage"] == "ResponseComplete"
    )  # one id per request
    create = next(e for e in by_verb["create"] if e["stage"] == "ResponseComplete")
    assert create["objectRef"]["name"] == "db1" and create["objectRef"]["uid"]
    assert create["userAgent"] == "audit-test/1.0"
    notes = create["annotations"]
    assert notes["kubewerk.dev/trace-id"] == TRACE
    assert notes["kubewerk.dev/storage-event"] == "ADDED"
    patch = orjson.loads(notes["kubewerk.dev/spec-patch"])
    assert patch == [
        {
            "op": "add",
            "path": "/spec",
            "value": {"engine": "postgres", "replicas": 1, "storage": "1Gi"},
        }
    ]
    update = next(e for e in by_verb["update"] if e["stage"] == "ResponseComplete")
    assert orjson.loads(update["annotations"]["kubewerk.dev/spec-patch"]) == [
        {"op": "replace", "path": "/spec/replicas", "value": 2}
    ]
    get = next(e for e in by_verb["get"] if e["stage"] == "ResponseComplete")
    assert "annotations" not in get  # reads commit nothing


async def test_error_status_user_agent_and_audit_id(audited: Audited) -> None:
    api = audited.api
    status, body = await api.get(f"{DB_PATH}/missing", headers={"Audit-ID": "my-audit-id"})
    assert status == 404
    async with api.session.get(api.base + "/version") as resp:
        assert resp.headers["Audit-Id"]
    events = audited.events()
    missing = [e for e in events if e["auditID"] == "my-audit-id"]
    assert [e["stage"] for e in missing] == ["RequestReceived", "ResponseComplete"]
    rs = missing[1]["responseStatus"]
    assert rs["code"] == 404 and rs["reason"] == "NotFound" and rs["status"] == "Failure"
    assert rs["message"] == body["message"]
    version = [e for e in events if e["requestURI"] == "/version"]
    assert version[-1]["verb"] == "get" and "objectRef" not in version[-1]


@pytest.mark.parametrize(
    "audited",
    [
        policy(
            {"level": "None", "nonResourceURLs": ["/version", "/openapi/*"]},
            {"level": "Metadata", "omitStages": ["RequestReceived"], "verbs": ["get", "list"]},
            {"level": "Request", "omitManagedFields": True},
            omitStages=["ResponseStarted"],
        )
    ],
    indirect=True,
)
async def test_policy_rules_choose_level_and_stages(audited: Audited) -> None:
    api = audited.api
    async with api.session.get(api.base + "/version") as resp:
        assert resp.status == 200
    await api.get(DB_PATH)
    managed = [
        {
            "manager": "kubectl",
            "operation": "Update",
            "apiVersion": "demo.kubewerk.dev/v1",
            "time": "2024-01-01T00:00:00Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:spec": {}},
        }
    ]
    await api.post(DB_PATH, database("db1", labels={"x": "y"}, managedFields=managed))
    await api.watch(f"{DB_PATH}?watch=true&timeoutSeconds=1", stop_after=1)
    for _ in range(100):  # the watch ends on the server when its timeout is up
        events = audited.events()
        if [e for e in events if e["verb"] == "watch" and e["stage"] == "ResponseComplete"]:
            break
        await asyncio.sleep(0.05)
    assert not [e for e in events if e["requestURI"] == "/version"]
    lists = [e for e in events if e["verb"] == "list"]
    assert [(e["stage"], e["level"]) for e in lists] == [("ResponseComplete", "Metadata")]
    creates = [
        e for e in events if e["verb"] == "create" and e["objectRef"]["resource"] == "databases"
    ]
    assert [e["stage"] for e in creates] == ["RequestReceived", "ResponseComplete"]
    assert creates[0]["requestObject"]["metadata"] == {"name": "db1", "labels": {"x": "y"}}
    watches = [e for e in events if e["verb"] == "watch"]
    assert [e["stage"] for e in watches] == ["RequestReceived", "ResponseComplete"]


async def test_metrics_carry_the_audit_counters(audited: Audited) -> None:
    async with audited.api.session.get(audited.api.base + "/metrics") as resp:
        text = await resp.text()
        assert resp.status == 200
    assert "apiserver_audit_event_total " in text
    assert 'apiserver_audit_error_total{plugin="log"} 0.0' in text
    assert 'apiserver_audit_level_total{level="RequestResponse"}' in text
    assert "apiserver_request_total" in text  # the server's own families are still there


def test_writer_drops_and_counts_when_the_backlog_is_full(tmp_path: Path) -> None:
    writer = LogWriter(tmp_path / "a.log", max_backlog=2)
    gate = threading.Event()
    original = writer._write_out

    def slow(pending: list[bytes]) -> None:
        gate.wait(5)
        original(pending)

    writer._write_out = slow  # type: ignore[method-assign]
    results = [writer.write({"n": i}) for i in range(10)]
    assert results.count(False) >= 7  # at most the backlog and the one being written
    assert writer.dropped == results.count(False)
    gate.set()
    writer.close()
    lines = (tmp_path / "a.log").read_bytes().splitlines()
    assert len(lines) == results.count(True)
    assert writer.written == len(lines)


async def test_spec_history_replays_to_every_past_version(audited: Audited) -> None:
    api = audited.api
    path = f"{DB_PATH}/hist"
    seen: list[tuple[str, dict[str, Any] | None]] = []

    async def observe() -> None:
        status, got = await api.get(path)
        if status == 404:
            seen.append(("", None))
        else:
            seen.append((got["metadata"]["resourceVersion"], {"spec": got["spec"]}))

    hdrs = {"traceparent": TRACEPARENT}
    assert (await api.post(DB_PATH, database("hist", version="15"), headers=hdrs))[0] == 201
    await observe()
    assert (await api.patch(path, {"spec": {"replicas": 3, "version": "16"}}))[0] == 200
    await observe()
    ops = [
        {"op": "remove", "path": "/spec/version"},
        {"op": "replace", "path": "/spec/engine", "value": "mysql"},
    ]
    assert (await api.patch(path, ops, kind="json"))[0] == 200
    await observe()
    _, got = await api.get(path)
    got["spec"] = {"engine": "postgres", "replicas": 5, "storage": "10Gi", "version": "a/b~c"}
    assert (await api.put(path, got))[0] == 200
    await observe()
    _, got = await api.get(path)
    got["status"] = {"replicas": 5}
    assert (await api.put(f"{path}/status", got))[0] == 200  # no spec change
    await observe()
    assert (await api.patch(path, {"metadata": {"labels": {"a": "b"}}}))[0] == 200
    await observe()
    assert (await api.delete(path))[0] == 200
    await observe()
    assert (await api.post(DB_PATH, database("hist", engine="mysql", replicas=2)))[0] == 201
    await observe()
    # a write to another object is not in this object's history
    assert (await api.post(DB_PATH, database("other")))[0] == 201
    events = audited.events()
    lines = [orjson.dumps(e) for e in events]
    writes = read_history(lines, parse_target("databases/hist", "default"))
    assert len(writes) == len(seen) == 8
    assert [w.storage_event for w in writes] == ["ADDED"] + ["MODIFIED"] * 5 + ["DELETED", "ADDED"]
    assert writes[0].trace_id == TRACE and writes[1].trace_id == ""
    assert [w.verb for w in writes][:3] == ["create", "patch", "patch"]
    for n, (rv, spec_doc) in enumerate(seen, 1):
        assert replay(writes, n) == spec_doc, n
        if rv:
            assert str(writes[n - 1].resource_version) == rv
            assert version_at(writes, rv) == n
    assert replay(writes, 0) is None
    assert read_history(lines, parse_target("database/hist")) == writes
    assert read_history(lines, parse_target("databases.demo.kubewerk.dev/hist")) == writes
    assert read_history(lines, parse_target("databases/hist", "other-ns")) == []
    assert read_history(lines, parse_target("databases.example.com/hist")) == []
    # the command line: the list, a past version, errors
    log = audited.log
    assert cli("history", "databases/hist", "--log", str(log), "-n", "default") == 0
    out = cli_json("history", "databases/hist", "--log", str(log), "-o", "json")
    assert [w["resourceVersion"] for w in out["writes"]] == [
        rv or w["resourceVersion"] for (rv, _), w in zip(seen, out["writes"], strict=True)
    ]
    for rv, spec_doc in seen:
        if rv:
            got = cli_json("history", "databases/hist", "--log", str(log), "--at", rv, "-o", "json")
            assert {"spec": got["spec"]} == spec_doc
            assert got["metadata"] == {
                "name": "hist",
                "namespace": "default",
                "resourceVersion": rv,
            }
            assert got["apiVersion"] == "demo.kubewerk.dev/v1"
    deleted_rv = str(writes[6].resource_version)
    assert cli("history", "databases/hist", "--log", str(log), "--at", deleted_rv) == 1
    assert cli("history", "databases/nothing", "--log", str(log)) == 1
    assert cli("history", "databases", "--log", str(log)) == 2
    assert cli("history", "databases/hist", "--log", str(log), "--at", "yesterday") == 2
    assert cli("history", "databases/hist", "--log", str(log / "missing")) == 2


def cli(*argv: str) -> int:
    import argparse

    from kubewerk.cli import UsageError
    from kubewerk.cli import audit as audit_cli

    parser = argparse.ArgumentParser(prog="kubewerk")
    audit_cli.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["audit", *argv])
    try:
        code: int = args.func(args)
    except UsageError:
        return 2
    return code


def cli_json(*argv: str) -> Any:
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert cli(*argv) == 0
    return orjson.loads(buf.getvalue())


async def test_embedded_server_audit_flags(tmp_path: Path) -> None:
    pol = tmp_path / "policy.yaml"
    pol.write_text("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n")
    log = tmp_path / "audit.log"
    with pytest.raises(ValueError, match="must be given together"):
        EmbeddedServer(audit_policy_file=pol)
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Loud\n")
    with pytest.raises(ValueError, match=r'level: Unsupported value: "Loud"'):
        EmbeddedServer(audit_policy_file=bad, audit_log_path=log)
    async with EmbeddedServer(audit_policy_file=pol, audit_log_path=log) as server:
        api = Api(server.url)
        try:
            assert (await api.get("/api/v1/namespaces/default"))[0] == 200
        finally:
            await api.close()
    events = [orjson.loads(line) for line in log.read_bytes().splitlines()]
    got = [e for e in events if e["requestURI"] == "/api/v1/namespaces/default"]
    assert [e["stage"] for e in got] == ["RequestReceived", "ResponseComplete"]
    assert got[1]["objectRef"] == {
        "resource": "namespaces",
        "namespace": "default",
        "name": "default",
        "apiVersion": "v1",
    }
    from kubewerk.cli import main

    assert main(["audit", "history", "databases/x", "--log", str(log)]) == 1


def test_a_file_that_is_not_an_audit_log_is_refused(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("# a project\n\nnot JSON lines\n")
    assert cli("history", "databases/hist", "--log", str(readme)) == 2
    with pytest.raises(HistoryError, match="not an audit log"):
        read_history([b'{"kind": "Pod"}', b"[1, 2]"], parse_target("databases/hist"))
    # an empty log, or one whose last line was cut short, is a log without that write
    empty = tmp_path / "empty.log"
    empty.write_text("\n")
    assert cli("history", "databases/hist", "--log", str(empty)) == 1
    event = {"kind": "Event", "stage": "ResponseComplete", "objectRef": {"resource": "pods"}}
    assert read_history([orjson.dumps(event), b'{"kind": "Ev'], parse_target("db/hist")) == []
