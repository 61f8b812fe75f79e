"""``kubewerk policy test`` (offline) and the embedded server agree on ValidatingAdmissionPolicies.

One table of cases — policies with ConfigMap params (by name, and by selector in the
request's namespace), variables, matchConditions, messageExpression, reasons, Deny /
Warn / Audit bindings, failurePolicy Fail and Ignore on an expression error,
namespaceSelector, ``namespaceObject``, ``request.userInfo``, CREATE / UPDATE / DELETE
with ``oldObject`` — is run twice: through the embedded server over HTTP (every case a
real write) and through the ``kubewerk policy test`` command in a subprocess, given the
same objects the server admitted (the stored old object, the namespace as stored, the
user the server attributes requests to). Verdict, HTTP code, message, warnings and
audit annotations must be equal, and the verdict the one each case expects.

The embedded server has no authentication: every request is ``system:unsecured`` in
``system:masters`` (as kube-apiserver's insecure port had it), so the user is the one
thing the table cannot vary on the server side.
"""

from __future__ import annotations

import json
import logging
import re
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from kubewerk.apiserver.server import EmbeddedServer
from tests.apiserver.helpers import Api

AR = "/apis/admissionregistration.k8s.io/v1"
USER = "system:unsecured"
GROUPS = ["system:masters", "system:authenticated"]


def _rules(resource: str, *ops: str) -> dict[str, Any]:
    return {
        "resourceRules": [
            {
                "apiGroups": [""],
                "apiVersions": ["v1"],
                "operations": list(ops),
                "resources": [resource],
            }
        ]
    }


def _policy(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": spec,
    }


def _binding(name: str, policy: str, actions: list[str], set_label: str, **spec: Any) -> Any:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": {
            "policyName": policy,
            "validationActions": actions,
            "matchResources": {"namespaceSelector": {"matchLabels": {"set": set_label}}},
            **spec,
        },
    }


POLICIES: list[dict[str, Any]] = [
    _policy(
        "cm-rules.agree.test",
        paramKind={"apiVersion": "v1", "kind": "ConfigMap"},
        matchConstraints=_rules("configmaps", "CREATE", "UPDATE"),
        matchConditions=[
            {"name": "not-skipped", "expression": "!object.metadata.name.startsWith('skip-')"}
        ],
        variables=[{"name": "keys", "expression": "has(object.data) ? size(object.data) : 0"}],
        validations=[
            {
                "expression": "variables.keys <= int(params.data.maxKeys)",
                "messageExpression": "'at most ' + params.data.maxKeys + ' keys, got ' + "
                "string(variables.keys)",
            },
            {
                "expression": "!has(object.metadata.labels) || "
                "!('forbidden' in object.metadata.labels)",
                "message": "the label forbidden may not be set",
                "reason": "Forbidden",
            },
            {
                "expression": "request.operation != 'UPDATE' || !has(oldObject.metadata.labels) "
                "|| !('frozen' in oldObject.metadata.labels) || object.data == oldObject.data",
                "message": "frozen config maps keep their data",
            },
        ],
        auditAnnotations=[{"key": "keys", "valueExpression": "string(variables.keys)"}],
    ),
    _policy(
        "delete-guard.agree.test",
        matchConstraints=_rules("configmaps", "DELETE"),
        validations=[
            {
                "expression": "!has(oldObject.metadata.labels) || "
                "!('protected' in oldObject.metadata.labels)",
                "message": "protected config maps cannot be deleted",
            }
        ],
    ),
    _policy(
        "secret-owner.agree.test",
        matchConstraints=_rules("secrets", "CREATE", "UPDATE"),
        validations=[
            {
                "expression": "has(object.data) && 'owner' in object.data",
                "messageExpression": "'secret ' + object.metadata.name + ' names no owner'",
            }
        ],
    ),
    _policy(
        "secret-size.agree.test",
        matchConstraints=_rules("secrets", "CREATE", "UPDATE"),
        validations=[
            {
                "expression": "!has(object.data) || size(object.data) < 4",
                "message": "a secret holds at most 3 keys",
            }
        ],
    ),
    _policy(
        "reviewed-in-prod.agree.test",
        failurePolicy="Fail",
        matchConstraints=_rules("configmaps", "CREATE", "UPDATE"),
        validations=[
            {
                "expression": "!has(namespaceObject.metadata.labels) || "
                "!('tier' in namespaceObject.metadata.labels) || "
                "namespaceObject.metadata.labels['tier'] != 'prod' || "
                "(has(object.metadata.annotations) && 'reviewed' in object.metadata.annotations "
                "&& object.metadata.annotations['reviewed'] == 'yes')",
                "message": "config maps in production namespaces need reviewed=yes",
            },
            {
                "expression": f"request.userInfo.username == '{USER}' && "
                "'system:masters' in request.userInfo.groups",
                "message": "only the local administrator writes here",
                "reason": "RequestEntityTooLarge",
            },
            {
                "expression": "!has(object.data) || !('count' in object.data) || "
                "int(object.data['count']) < 10",
                "message": "count must stay below 10",
            },
        ],
    ),
    _policy(
        "ignore-errors.agree.test",
        failurePolicy="Ignore",
        matchConstraints=_rules("configmaps", "CREATE", "UPDATE"),
        validations=[{"expression": "int(object.data['limit']) < 5"}],
    ),
    _policy(
        "per-namespace.agree.test",
        paramKind={"apiVersion": "v1", "kind": "ConfigMap"},
        matchConstraints=_rules("configmaps", "CREATE", "UPDATE"),
        matchConditions=[
            {
                "name": "not-a-param",
                "expression": "!has(object.metadata.labels) || "
                "!('limits' in object.metadata.labels)",
            }
        ],
        validations=[
            {
                "expression": "!has(object.data) || size(object.data) <= int(params.data.max)",
                "messageExpression": "'at most ' + params.data.max + ' keys in ' + "
                "request.namespace",
            }
        ],
    ),
]

BINDINGS: list[dict[str, Any]] = [
    _binding(
        "cm-rules-binding",
        "cm-rules.agree.test",
        ["Deny", "Audit"],
        "a",
        paramRef={"name": "rules", "namespace": "params"},
    ),
    _binding("delete-guard-binding", "delete-guard.agree.test", ["Deny"], "b"),
    _binding("secret-owner-binding", "secret-owner.agree.test", ["Warn"], "c"),
    _binding("secret-size-binding", "secret-size.agree.test", ["Deny"], "c"),
    _binding("reviewed-binding", "reviewed-in-prod.agree.test", ["Deny"], "d"),
    _binding("ignore-errors-binding", "ignore-errors.agree.test", ["Warn"], "d"),
    _binding(
        "per-namespace-binding",
        "per-namespace.agree.test",
        ["Deny"],
        "e",
        paramRef={
            "selector": {"matchLabels": {"limits": "yes"}},
            "parameterNotFoundAction": "Deny",
        },
    ),
]

NAMESPACES: dict[str, dict[str, str]] = {
    "set-a": {"set": "a"},
    "set-b": {"set": "b"},
    "set-c": {"set": "c"},
    "set-d": {"set": "d", "tier": "prod"},
    "set-d-dev": {"set": "d", "tier": "dev"},
    "set-e1": {"set": "e"},
    "set-e2": {"set": "e"},
    "params": {},
    "unbound": {},
}


def _cm(ns: str, name: str, data: dict[str, str] | None = None, **meta: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns, **meta},
    }
    if data is not None:
        obj["data"] = data
    return obj


def _secret(ns: str, name: str, keys: list[str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": ns},
        "type": "Opaque",
        "data": {k: "eA==" for k in keys},
    }


PARAMS: list[dict[str, Any]] = [
    _cm("params", "rules", {"maxKeys": "2"}),
    _cm("set-e1", "limit-two", {"max": "2"}, labels={"limits": "yes"}),
    _cm("set-e1", "limit-three", {"max": "3"}, labels={"limits": "yes"}),
]


@dataclass
class Case:
    """One request: ``obj`` written (CREATE, or UPDATE of the stored ``old``), or ``old``
    deleted; ``allowed`` the verdict it must get; ``contains`` in its message."""

    name: str
    operation: str
    obj: dict[str, Any] | None
    old: dict[str, Any] | None = None
    allowed: bool = True
    contains: str = ""
    warned: bool = False
    server: dict[str, Any] = field(default_factory=dict)


def _update(old: dict[str, Any], **changes: Any) -> dict[str, Any]:
    new = json.loads(json.dumps(old))
    for key, value in changes.items():
        if key == "labels":
            new["metadata"]["labels"] = {**new["metadata"].get("labels", {}), **value}
        else:
            new[key] = value
    return new


def _cases() -> list[Case]:
    frozen = _cm("set-a", "frozen", {"a": "1"}, labels={"frozen": "yes"})
    frozen2 = _cm("set-a", "frozen2", {"a": "1"}, labels={"frozen": "yes"})
    plain = _cm("set-a", "plain", {"a": "1"})
    plain2 = _cm("set-a", "plain2", {"a": "1"})
    a_del = _cm("set-a", "a-del", {"a": "1"}, labels={"forbidden": "x"})
    protected = _cm("set-b", "protected", labels={"protected": "yes"})
    protected2 = _cm("set-b", "protected2", labels={"protected": "yes"})
    unprotected = _cm("set-b", "unprotected")
    owned = _secret("set-c", "owned", ["owner", "key"])
    doomed = _secret("set-c", "doomed", ["key"])
    dev = _cm("set-d-dev", "dev-old", {"a": "1"})
    gone = _cm("unbound", "gone", labels={"protected": "yes"})
    reviewed = {"reviewed": "yes"}
    return [
        Case("keys within the param", "CREATE", _cm("set-a", "a1", {"x": "1"})),
        Case(
            "keys over the param",
            "CREATE",
            _cm("set-a", "a2", {"x": "1", "y": "2", "z": "3"}),
            allowed=False,
            contains="at most 2 keys, got 3",
        ),
        Case(
            "forbidden label (reason Forbidden)",
            "CREATE",
            _cm("set-a", "a3", labels={"forbidden": "x"}),
            allowed=False,
            contains="the label forbidden may not be set",
        ),
        Case(
            "matchCondition skips",
            "CREATE",
            _cm("set-a", "skip-a4", {"x": "1", "y": "2", "z": "3"}, labels={"forbidden": "x"}),
        ),
        Case("no data: variable is 0", "CREATE", _cm("set-a", "a5")),
        Case(
            "frozen data changed",
            "UPDATE",
            _update(frozen, data={"a": "2"}),
            frozen,
            allowed=False,
            contains="frozen config maps keep their data",
        ),
        Case("frozen, labels only", "UPDATE", _update(frozen2, labels={"x": "y"}), frozen2),
        Case(
            "update over the param",
            "UPDATE",
            _update(plain, data={"a": "1", "b": "2", "c": "3"}),
            plain,
            allowed=False,
            contains="at most 2 keys, got 3",
        ),
        Case(
            "update within the param", "UPDATE", _update(plain2, data={"a": "1", "b": "2"}), plain2
        ),
        Case("delete not matched by the rules", "DELETE", None, a_del),
        Case(
            "delete protected",
            "DELETE",
            None,
            protected,
            allowed=False,
            contains="protected config maps cannot be deleted",
        ),
        Case("delete unprotected", "DELETE", None, unprotected),
        Case("create where only DELETE is guarded", "CREATE", _cm("set-b", "b-new")),
        Case(
            "update of a protected one",
            "UPDATE",
            _update(protected2, data={"a": "b"}),
            protected2,
        ),
        Case("secret with owner", "CREATE", _secret("set-c", "s1", ["owner", "a"])),
        Case("secret without owner warns", "CREATE", _secret("set-c", "s2", ["a"]), warned=True),
        Case(
            "secret too big",
            "CREATE",
            _secret("set-c", "s3", ["owner", "a", "b", "c"]),
            allowed=False,
            contains="a secret holds at most 3 keys",
        ),
        Case(
            "update drops the owner: warning",
            "UPDATE",
            _update(owned, data={"key": "eA=="}),
            owned,
            warned=True,
        ),
        Case("three keys with owner", "CREATE", _secret("set-c", "s4", ["owner", "a", "b"])),
        Case("delete of a secret: not matched", "DELETE", None, doomed),
        Case(
            "prod without review",
            "CREATE",
            _cm("set-d", "d1"),
            allowed=False,
            contains="config maps in production namespaces need reviewed=yes",
        ),
        Case("prod reviewed", "CREATE", _cm("set-d", "d2", annotations=reviewed)),
        Case(
            "expression error, failurePolicy Fail",
            "CREATE",
            _cm("set-d", "d3", {"count": "ten"}, annotations=reviewed),
            allowed=False,
            contains="resulted in error",
        ),
        Case(
            "count below 10",
            "CREATE",
            _cm("set-d", "d4", {"count": "3", "limit": "1"}, annotations=reviewed),
        ),
        Case(
            "Warn binding, default message",
            "CREATE",
            _cm("set-d", "d5", {"limit": "7"}, annotations=reviewed),
            warned=True,
        ),
        Case(
            "expression error, failurePolicy Ignore",
            "CREATE",
            _cm("set-d", "d6", annotations=reviewed),
        ),
        Case("dev needs no review", "CREATE", _cm("set-d-dev", "dev1", {"limit": "1"})),
        Case(
            "dev: count error still denies",
            "CREATE",
            _cm("set-d-dev", "dev2", {"count": "ten", "limit": "1"}),
            allowed=False,
            contains="resulted in error",
        ),
        Case("dev update", "UPDATE", _update(dev, data={"a": "2", "limit": "2"}), dev),
        Case("params by selector: within both", "CREATE", _cm("set-e1", "e1", {"a": "1"})),
        Case(
            "params by selector: over one of two",
            "CREATE",
            _cm("set-e1", "e2", {"a": "1", "b": "2", "c": "3"}),
            allowed=False,
            contains="at most 2 keys in set-e1",
        ),
        Case(
            "params by selector: a param-like object skipped",
            "CREATE",
            _cm("set-e1", "e3", {"a": "1", "b": "2", "c": "3"}, labels={"limits": "no"}),
        ),
        Case(
            "no params in the namespace, Deny",
            "CREATE",
            _cm("set-e2", "e4"),
            allowed=False,
            contains="no params found",
        ),
        Case(
            "unbound namespace",
            "CREATE",
            _cm("unbound", "u1", {"a": "1", "b": "2", "c": "3"}, labels={"forbidden": "x"}),
        ),
        Case("unbound delete", "DELETE", None, gone),
    ]


def _path(obj: dict[str, Any], named: bool) -> str:
    meta = obj["metadata"]
    plural = {"ConfigMap": "configmaps", "Secret": "secrets"}[obj["kind"]]
    base = f"/api/v1/namespaces/{meta['namespace']}/{plural}"
    return f"{base}/{meta['name']}" if named else base


_WARNING = re.compile(r'^299 - "(.*)"$')


async def _write(api: Api, method: str, path: str, body: Any) -> tuple[int, Any, list[str]]:
    data = orjson.dumps(body) if body is not None else None
    async with api.session.request(
        method, api.base + path, data=data, headers={"Content-Type": "application/json"}
    ) as resp:
        parsed = orjson.loads(await resp.read())
        warnings = []
        for header in resp.headers.getall("Warning", []):
            match = _WARNING.match(header)
            assert match, header
            warnings.append(match.group(1).replace('\\"', '"').replace("\\\\", "\\"))
        return resp.status, parsed, warnings


@pytest.fixture
async def api(aserver: EmbeddedServer) -> AsyncIterator[Api]:
    client = Api(aserver.url)
    try:
        yield client
    finally:
        await client.close()


async def _create(api: Api, path: str, body: Any) -> Any:
    status, stored = await api.post(path, body)
    assert status == 201, stored
    return stored


async def test_offline_cli_and_server_agree(
    api: Api, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cases = _cases()
    assert len(cases) >= 30
    # before any binding: namespaces, params, and the objects updates and deletes start from
    namespaces: dict[str, Any] = {}
    for ns, labels in NAMESPACES.items():
        body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": labels}}
        namespaces[ns] = await _create(api, "/api/v1/namespaces", body)
    for param in PARAMS:
        await _create(api, _path(param, False), param)
    for case in cases:
        if case.old is not None:
            stored = await _create(api, _path(case.old, False), case.old)
            case.old = stored
            if case.obj is not None:
                case.obj["metadata"].update(
                    {k: stored["metadata"][k] for k in ("uid", "resourceVersion")}
                )
                case.obj["metadata"]["creationTimestamp"] = stored["metadata"]["creationTimestamp"]
    for policy in POLICIES:
        await _create(api, f"{AR}/validatingadmissionpolicies", policy)
    for binding in BINDINGS:
        await _create(api, f"{AR}/validatingadmissionpolicybindings", binding)

    # the server: every case a real request; audit annotations from the audit log
    caplog.set_level(logging.INFO, logger="kubewerk.apiserver.audit")
    for case in cases:
        caplog.clear()
        if case.operation == "CREATE":
            assert case.obj is not None
            status, body, warnings = await _write(api, "POST", _path(case.obj, False), case.obj)
        elif case.operation == "UPDATE":
            assert case.obj is not None
            status, body, warnings = await _write(api, "PUT", _path(case.obj, True), case.obj)
        else:
            assert case.old is not None
            status, body, warnings = await _write(api, "DELETE", _path(case.old, True), None)
        audit: dict[str, str] = {}
        for record in caplog.records:
            if record.name == "kubewerk.apiserver.audit":
                audit.update(json.loads(record.getMessage().rsplit(": ", 1)[1]))
        case.server = {
            "allowed": status in (200, 201),
            "code": None if status in (200, 201) else status,
            "message": None if status in (200, 201) else body.get("message"),
            "warnings": warnings,
            "auditAnnotations": audit,
        }

    # the CLI: the same policies, params and objects, in one cases file
    (tmp_path / "policies.yaml").write_text(yaml.safe_dump_all(POLICIES + BINDINGS))
    (tmp_path / "params.yaml").write_text(yaml.safe_dump_all(PARAMS))
    entries = []
    for case in cases:
        source = case.obj if case.obj is not None else case.old
        assert source is not None
        entry: dict[str, Any] = {
            "name": case.name,
            "operation": case.operation,
            "user": USER,
            "groups": GROUPS,
            "namespaceObject": namespaces[source["metadata"]["namespace"]],
            "expect": "allowed" if case.allowed else "denied",
        }
        if case.obj is not None:
            entry["resource"] = case.obj
        if case.old is not None:
            entry["old"] = case.old
        entries.append(entry)
    (tmp_path / "cases.yaml").write_text(yaml.safe_dump({"cases": entries}))
    proc = subprocess.run(
        [
            *(sys.executable, "-m", "kubewerk.cli", "policy", "test", "-o", "json"),
            *("--policy", str(tmp_path / "policies.yaml")),
            *("--params", str(tmp_path / "params.yaml")),
            *("--cases", str(tmp_path / "cases.yaml")),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode in (0, 1), proc.stderr
    reports = json.loads(proc.stdout)["cases"]
    assert [r["name"] for r in reports] == [c.name for c in cases]

    disagreements = []
    for case, report in zip(cases, reports, strict=True):
        r = report["result"]
        offline = {
            "allowed": r["allowed"],
            "code": r["status"]["code"] if r["status"] else None,
            "message": r["status"]["message"] if r["status"] else None,
            "warnings": r["warnings"],
            "auditAnnotations": r["auditAnnotations"],
        }
        if offline != case.server:
            disagreements.append((case.name, case.server, offline))
        assert case.server["allowed"] == case.allowed, (case.name, case.server)
        assert case.contains in (case.server["message"] or ""), (case.name, case.server)
        assert bool(case.server["warnings"]) == case.warned, (case.name, case.server)
    assert not disagreements, disagreements
    assert proc.returncode == 0, proc.stdout


async def test_warnings_reach_the_client_with_a_denial(api: Api) -> None:
    await _create(
        api,
        "/api/v1/namespaces",
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": "c", "labels": {"set": "c"}},
        },
    )
    for obj in POLICIES[2:4]:
        await _create(api, f"{AR}/validatingadmissionpolicies", obj)
    for obj in BINDINGS[2:4]:
        await _create(api, f"{AR}/validatingadmissionpolicybindings", obj)
    secret = _secret("c", "big", ["a", "b", "c", "d"])
    status, _, warnings = await _write(api, "POST", _path(secret, False), secret)
    assert status == 422
    assert warnings == [
        "Validation failed for ValidatingAdmissionPolicy 'secret-owner.agree.test' with binding "
        "'secret-owner-binding': secret big names no owner"
    ]
