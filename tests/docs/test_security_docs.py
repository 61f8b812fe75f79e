"""docs/security.md's examples, saved under the file names the page gives and run as
written: the RBAC markers give the rules the page lists (``kubewerk gen rbac``), the
tenancy file compiles (``kubewerk gen policy``) to a policy whose refusal is the text the
page quotes (``kubewerk policy test``), the audit example writes the event its policy
asks for, and the encryption example stores Secrets under kube's prefix; a malformed
encryption file is refused with the quoted message. Nothing here needs a cluster."""

from __future__ import annotations

import base64
import json
import os
import re
import runpy
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubewerk.cli import main

from .pages import fenced, named_files, page

DOC = page("security")
MODULES = ("db_operator", "tenancy", "audited")


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A directory with every file the page names, as the current directory."""
    written = {p.name for p in named_files(fenced(DOC), tmp_path)}
    assert written == {
        "db_operator.py",
        "tenancy.yaml",
        "tenancy.py",
        "audit-policy.yaml",
        "audited.py",
        "encryption.yaml",
    }
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        yield tmp_path
    finally:
        for name in MODULES:
            sys.modules.pop(name, None)


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def _first_comment(name: str) -> str:
    [block] = [b for b in fenced(DOC) if b.text.startswith(f"# {name} ")]
    return block.text.split("\n", 1)[0]


def test_the_rbac_markers_give_the_rules_the_page_lists(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    command = re.findall(r"`kubewerk (gen rbac [^`]*)`", _first_comment("db_operator.py"))
    assert command == ["gen rbac db_operator:mgr"]
    code, out, err = _run(command[0].split(), capsys)
    assert (code, err) == (0, "")
    objects = {(o["kind"], o["metadata"].get("namespace")): o for o in yaml.safe_load_all(out)}
    rules = {
        (group, resource, verb)
        for rule in objects[("ClusterRole", None)]["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }
    assert {("", "secrets", "get")} | {
        ("apps", r, v) for r in ("deployments", "deployments/scale") for v in ("get", "update")
    } <= rules
    assert objects[("Role", "ops")]["rules"] == [
        {
            "apiGroups": [""],
            "resourceNames": ["settings"],
            "resources": ["configmaps"],
            "verbs": ["get"],
        }
    ]


def test_the_tenancy_file_refuses_with_the_quoted_text(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    command = re.findall(r"`kubewerk (gen policy [^`]*)`", _first_comment("tenancy.py"))
    assert command == ["gen policy tenancy -o policies"]
    code, out, _ = _run(command[0].split(), capsys)
    assert (code, out) == (0, "policies/kubewerk-tenant-constraints.yaml\n")
    objects = list(yaml.safe_load_all(Path(out.strip()).read_text()))
    assert [o["kind"] for o in objects] == [
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
        "ValidatingAdmissionPolicyBinding",
        "ConfigMap",
    ]
    Path("policy.yaml").write_text(yaml.safe_dump_all(objects[:3]))
    Path("params.yaml").write_text(yaml.safe_dump(objects[3]))
    labels = {"kubewerk.dev/tenant": "acme", "kubewerk.dev/environment": "prod"}
    namespace: dict[str, Any] = {"apiVersion": "v1", "kind": "Namespace"}
    namespace["metadata"] = {"name": "acme-prod", "labels": labels}
    Path("ns.yaml").write_text(yaml.safe_dump(namespace))
    configmap: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap"}
    configmap["metadata"] = {"name": "app", "namespace": "acme-prod"}
    Path("cm.yaml").write_text(yaml.safe_dump(configmap))
    argv = ["policy", "test", "--policy", "policy.yaml", "--params", "params.yaml"]
    argv += ["--resource", "cm.yaml", "--namespace-object", "ns.yaml", "--user", "bob"]
    code, out, _ = _run(argv, capsys)
    assert code == 1
    [quoted] = [b.text for b in fenced(DOC) if b.text.startswith('configmaps "app" is forbidden')]
    assert out.endswith("\n") and out.count("\n") == 1
    assert out.split() == f"DENIED CREATE ConfigMap/acme-prod/app (403 Forbidden): {quoted}".split()
    argv[argv.index("bob")] = "alice"
    code, _, _ = _run([*argv, "--groups", "acme-devs"], capsys)
    assert code == 1  # acme-devs may act in dev and staging only


def test_the_audit_example_writes_the_event_its_policy_asks_for(workdir: Path) -> None:
    runpy.run_path("audited.py", run_name="__main__")
    log = Path("audit.log")
    assert log.stat().st_mode & 0o777 == 0o600
    events: list[dict[str, Any]] = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(e["verb"], e["level"], e["stage"]) for e in events] == [
        ("create", "RequestResponse", "ResponseComplete")
    ]
    assert events[0]["requestObject"]["data"] == {"mode": "fast"}
    assert events[0]["objectRef"]["name"] == "settings"


def test_the_encryption_example_stores_secrets_encrypted(workdir: Path) -> None:
    config = Path("encryption.yaml").read_text()
    for placeholder in set(re.findall(r"<base64 of [^>]*>", config)):
        config = config.replace(placeholder, base64.b64encode(os.urandom(32)).decode())
    Path("encryption.yaml").write_text(config)
    [example] = [b for b in fenced(DOC) if "encryption_config=" in b.text and b.lang == "python"]
    scope: dict[str, Any] = {}
    exec(compile(example.text, f"docs/security.md:{example.line}", "exec"), scope)
    server = scope["server"].start_in_thread()
    try:
        secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db"}}
        secret["stringData"] = {"password": "hunter2"}
        request = urllib.request.Request(
            server.url + "/api/v1/namespaces/default/secrets",
            data=json.dumps(secret).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.status == 201
    finally:
        server.stop_thread()
    stored = b"".join(p.read_bytes() for p in Path().glob("kubewerk.db*"))
    assert b"k8s:enc:aesgcm:v1:key2:" in stored
    assert b"hunter2" not in stored and base64.b64encode(b"hunter2") not in stored


def test_a_malformed_encryption_file_is_refused_with_the_quoted_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("enc.yaml").write_text(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\n"
        "resources:\n  - resources: [secrets]\n    providers:\n      - aesgcm:\n"
        "          keys: [{name: key1, secret: YWJjZGU=}]\n"
    )
    argv = ["up", "--store", "sqlite:./kubewerk.db", "--encryption-provider-config", "enc.yaml"]
    code, _, err = _run(argv, capsys)
    assert code == 2 and not Path("kubewerk.db").exists()
    quoted = re.search(r"e\.g\. `(error while parsing encryption provider[^`]*)`", DOC)
    assert quoted is not None
    assert err.count("\n") == 1
    expected = f"kubewerk: error: --encryption-provider-config: {quoted.group(1)}"
    assert err.split() == expected.split()
