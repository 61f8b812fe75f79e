# ruff: noqa: E501
"""``kubewerk policy test`` and ``kubewerk gen policy``: verdicts, JSON, exit codes, cases."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubewerk.cli import main

POLICY = """\
name: replica-limit
match:
  - {apiGroups: [apps], apiVersions: [v1], resources: [deployments]}
params: {configMap: replica-limits, namespace: policy-system}
check:
  chain:
    - {expression: "has(object.spec.replicas)", message: "spec.replicas is required"}
    - expression: "object.spec.replicas <= int(params.data.max)"
      messageExpression: "'at most ' + params.data.max + ' replicas'"
"""
PARAMS = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: replica-limits, namespace: policy-system}
data: {max: "5"}
"""
DENIED = "deployments.apps \"web\" is forbidden: ValidatingAdmissionPolicy 'replica-limit' with binding 'replica-limit-binding' denied request: at most 5 replicas"


def deploy(replicas: int) -> str:
    return f"apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: web, namespace: default}}\nspec: {{replicas: {replicas}}}\n"


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "policy.yaml").write_text(POLICY)
    (tmp_path / "params.yaml").write_text(PARAMS)
    (tmp_path / "ok.yaml").write_text(deploy(3))
    (tmp_path / "big.yaml").write_text(deploy(7))
    return tmp_path


def test_denied_text_and_exit_1(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "policy",
            "test",
            "--policy",
            str(files / "policy.yaml"),
            "--params",
            str(files / "params.yaml"),
            "--resource",
            str(files / "big.yaml"),
        ]
    )
    assert code == 1
    assert (
        capsys.readouterr().out == f"DENIED CREATE Deployment/default/web (422 Invalid): {DENIED}\n"
    )


def test_allowed_exit_0(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "policy",
            "test",
            "--policy",
            str(files / "policy.yaml"),
            "--params",
            str(files / "params.yaml"),
            "--resource",
            str(files / "ok.yaml"),
        ]
    )
    assert code == 0
    assert capsys.readouterr().out == "ALLOWED CREATE Deployment/default/web\n"


def test_json_output(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "policy",
            "test",
            "--policy",
            str(files / "policy.yaml"),
            "--params",
            str(files / "params.yaml"),
            "--resource",
            str(files / "big.yaml"),
            "--resource",
            str(files / "ok.yaml"),
            "-o",
            "json",
        ]
    )
    assert code == 1
    out = json.loads(capsys.readouterr().out)
    assert [r["allowed"] for r in out["results"]] == [False, True]
    status = out["results"][0]["status"]
    assert (status["code"], status["reason"], status["message"]) == (422, "Invalid", DENIED)


def test_update_with_old(files: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "p2.yaml").write_text(
        "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata: {name: no-down}\n"
        "spec:\n  matchConstraints: {resourceRules: [{apiGroups: [apps], apiVersions: [v1], operations: [UPDATE], resources: [deployments]}]}\n"
        "  validations:\n  - {expression: 'object.spec.replicas >= oldObject.spec.replicas', message: no scaling down, reason: Forbidden}\n"
    )
    code = main(
        [
            "policy",
            "test",
            "--policy",
            str(tmp_path / "p2.yaml"),
            "--resource",
            str(files / "ok.yaml"),
            "--old",
            str(files / "big.yaml"),
            "--user",
            "alice",
            "--groups",
            "dev",
        ]
    )
    captured = capsys.readouterr()
    assert code == 1
    assert (
        "note: policy 'no-down' has no binding; bound as 'no-down-binding' with validationActions [Deny]"
        in captured.err
    )
    assert captured.out.startswith(
        "DENIED UPDATE Deployment/default/web (403 Forbidden): deployments.apps \"web\" is forbidden: ValidatingAdmissionPolicy 'no-down' with binding 'no-down-binding' denied request: no scaling down"
    )


def test_invalid_policy_exit_2(
    tmp_path: Path, files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "bad.yaml").write_text(
        "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata: {name: bad}\n"
        "spec:\n  matchConstraints: {resourceRules: [{apiGroups: [apps], apiVersions: [v1], operations: [CREATE], resources: [deployments]}]}\n"
        "  validations:\n  - expression: 'object.spec.replicas <'\n"
    )
    code = main(
        [
            "policy",
            "test",
            "--policy",
            str(tmp_path / "bad.yaml"),
            "--resource",
            str(files / "ok.yaml"),
        ]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith(
        'kubewerk: error: ValidatingAdmissionPolicy "bad" is invalid: spec.validations[0].expression: Invalid value: "object.spec.replicas <": compilation failed: ERROR: <input>:1:23: Syntax error:'
    )
    assert "Traceback" not in err


def test_missing_file_exit_2(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "policy",
            "test",
            "--policy",
            str(files / "nope.yaml"),
            "--resource",
            str(files / "ok.yaml"),
        ]
    )
    assert code == 2
    assert "nope.yaml: No such file or directory" in capsys.readouterr().err


def test_cases_file(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases: dict[str, Any] = {
        "cases": [
            {"name": "small", "resource": "ok.yaml", "expect": "allowed"},
            {"name": "big", "resource": "big.yaml", "expect": "denied", "message": DENIED},
            {
                "name": "inline",
                "resource": yaml.safe_load(deploy(9)),
                "expect": "denied",
                "messageContains": "at most 5",
            },
            {"name": "wrong", "resource": "ok.yaml", "expect": "denied"},
        ]
    }
    (files / "cases.yaml").write_text(yaml.safe_dump(cases))
    code = main(
        [
            "policy",
            "test",
            "--policy",
            str(files / "policy.yaml"),
            "--params",
            str(files / "params.yaml"),
            "--cases",
            str(files / "cases.yaml"),
        ]
    )
    assert code == 1
    assert (
        capsys.readouterr().out
        == "PASS small\nPASS big\nPASS inline\nFAIL wrong\n  expected denied, got allowed\n3 passed, 1 failed\n"
    )
    cases["cases"].pop()
    (files / "cases.yaml").write_text(yaml.safe_dump(cases))
    code = main(
        [
            "policy",
            "test",
            "--policy",
            str(files / "policy.yaml"),
            "--params",
            str(files / "params.yaml"),
            "--cases",
            str(files / "cases.yaml"),
            "-o",
            "json",
        ]
    )
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["passed"], out["failed"]) == (3, 0)


def test_gen_policy_writes_valid_yaml(
    files: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from kubewerk.schema.admission_policy import validate_binding, validate_policy

    out = tmp_path / "out"
    assert main(["gen", "policy", str(files / "policy.yaml"), "-o", str(out)]) == 0
    assert capsys.readouterr().out == f"{out / 'replica-limit.yaml'}\n"
    vap, binding = yaml.safe_load_all((out / "replica-limit.yaml").read_text())
    assert (
        vap["kind"] == "ValidatingAdmissionPolicy"
        and binding["kind"] == "ValidatingAdmissionPolicyBinding"
    )
    assert validate_policy(vap) == [] and validate_binding(binding) == []
    assert binding["spec"]["paramRef"] == {
        "name": "replica-limits",
        "namespace": "policy-system",
        "parameterNotFoundAction": "Deny",
    }


def test_gen_policy_from_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "mypolicies.py").write_text(
        "from kubewerk.webhook.policy import Policy, check, rule\n"
        "limit = Policy(name='limit', match=[rule('apps', 'v1', 'deployments')], check=check('object.spec.replicas <= 5', 'too many'))\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert main(["gen", "policy", "mypolicies"]) == 0
    docs = list(yaml.safe_load_all(capsys.readouterr().out))
    assert docs[0]["spec"]["validations"] == [
        {"expression": "object.spec.replicas <= 5", "message": "too many"}
    ]
    assert main(["gen", "policy", "json"]) == 2
    assert "module 'json' defines no kubewerk.webhook.policy.Policy" in capsys.readouterr().err


def test_a_python_file_of_policies_for_gen_and_policy_test(
    files: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A ``.py`` path works where a module name does: gen policy and policy test import it
    (its folder on the path); policy test used to read it as YAML and fail."""
    pkg = tmp_path / "pols"
    pkg.mkdir()
    (pkg / "limits_by_file.py").write_text(
        "from kubewerk.webhook.policy import Policy, check, rule\n"
        "limit = Policy(name='limit', match=[rule('apps', 'v1', 'deployments')], check=check('object.spec.replicas <= 5', 'too many'))\n"
    )
    monkeypatch.setattr("sys.path", list(__import__("sys").path))
    path = str(pkg / "limits_by_file.py")
    assert main(["gen", "policy", path]) == 0
    assert yaml.safe_load_all(capsys.readouterr().out).__next__()["metadata"]["name"] == "limit"
    code = main(["policy", "test", "--policy", path, "--resource", str(files / "big.yaml")])
    out = capsys.readouterr().out
    assert code == 1 and "ValidatingAdmissionPolicy 'limit' with binding 'limit-binding'" in out
    assert main(["policy", "test", "--policy", path, "--resource", str(files / "ok.yaml")]) == 0
    capsys.readouterr()
    assert main(["gen", "policy", str(pkg / "absent.py")]) == 2
    assert f"{pkg / 'absent.py'}: no such file" in capsys.readouterr().err
