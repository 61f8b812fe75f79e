"""Mistakes a first-time user makes with ``kubewerk``: each gives one ``kubewerk: error:``
line and a meaningful exit code, never a traceback (found walking the README as a
newcomer)."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

import kubewerk.cli
from kubewerk.cli import main
from kubewerk.cli.targets import takes_no_arguments


def test_ctrl_c_while_the_subcommands_load_exits_130_without_a_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupted(command: str | None = None) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(kubewerk.cli, "build_parser", interrupted)
    assert main(["lint", "crds/"]) == 130
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(
    ("argv", "what"),
    [
        (["run", "json:loads"], "kubewerk.runtime.Manager"),
        (["webhook", "serve", "json:loads"], "kubewerk.webhook.WebhookApp"),
        (["gen", "rbac", "json:loads"], "kubewerk.runtime.Manager"),
    ],
)
def test_a_target_that_is_a_function_needing_arguments_is_a_usage_error(
    argv: list[str], what: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"kubewerk: error: json:loads is not a {what}")
    assert err.endswith(" (got function)\n") and err.count("\n") == 1


def _needs_one(a: int) -> int:
    return a


def _defaults_only(a: int = 1, *rest: int, **named: int) -> int:
    return a


def _keyword_only(*, a: int) -> int:
    return a


def test_only_callables_that_take_no_arguments_count_as_factories() -> None:
    assert takes_no_arguments(_defaults_only)
    assert takes_no_arguments(lambda: None)
    assert takes_no_arguments(dict.fromkeys) is False  # needs an iterable
    assert not takes_no_arguments(_needs_one)
    assert not takes_no_arguments(_keyword_only)
    assert not takes_no_arguments(len)
    assert not takes_no_arguments("not callable")


def test_run_still_calls_a_factory_that_takes_no_arguments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kubewerk.cli.run import load_target
    from kubewerk.runtime.manager import Manager

    (tmp_path / "factory_target_mod.py").write_text(
        "from kubewerk.runtime import Manager\n"
        "def make(namespace: str = 'x') -> Manager:\n"
        "    return Manager()\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "factory_target_mod", raising=False)
    assert isinstance(load_target("factory_target_mod:make"), Manager)


@pytest.mark.parametrize("port", ["99999", "-1"])
def test_demo_port_out_of_range_is_a_usage_error(
    port: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["demo", "--port", port]) == 2
    assert capsys.readouterr().err == (
        f"kubewerk: error: --port must be between 0 and 65535, not {port}\n"
    )


def test_demo_kubeconfig_that_is_a_directory_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["demo", "--kubeconfig", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err == f"kubewerk: error: --kubeconfig {tmp_path}: cannot write it: Is a directory\n"


def test_demo_prints_each_kubectl_command_so_that_a_shell_runs_it_as_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The status patch's JSON has braces, quotes and commas: pasted into a shell, the
    printed line must give kubectl the same arguments the demo gave it."""
    import subprocess

    from kubewerk.cli import demo

    ran: list[list[str]] = []

    def fake_run(argv: list[str], **_: Any) -> subprocess.CompletedProcess[str]:
        ran.append(argv)
        return subprocess.CompletedProcess(argv, 0, "", "")

    monkeypatch.setattr(demo.subprocess, "run", fake_run)
    demo._with_kubectl("kubectl", tmp_path / "kubeconfig")
    shown = [
        shlex.split(line[2:]) for line in capsys.readouterr().out.splitlines() if line[:2] == "$ "
    ]
    assert shown == ran
    assert any(any(arg.startswith('{"status"') for arg in argv) for argv in shown)


@pytest.mark.parametrize(
    ("flag", "value", "expected"),
    [
        ("--retain-events", "-1", "expected a whole number >= 0, not '-1'"),
        ("--retain-seconds", "-3", "expected a number of seconds >= 0, not '-3'"),
        ("--retain-seconds", "nan", "expected a number of seconds >= 0, not 'nan'"),
    ],
)
def test_up_retention_flags_name_themselves_when_wrong(
    flag: str, value: str, expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["up", flag, value])
    assert exited.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"kubewerk up: error: argument {flag}: {expected}"
    )


def test_malformed_yaml_to_diff_and_to_up_is_reported_on_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("a: [b\n")
    good = tmp_path / "cm.yaml"
    good.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    assert main(["diff", str(bad), str(good)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"kubewerk: error: {bad}: not YAML: ") and err.count("\n") == 1
    assert "line 2, column 1" in err
    store = f"sqlite:{tmp_path / 'x.db'}"
    argv = ["up", "--encryption-provider-config", str(bad), "--port", "0", "--store", store]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("kubewerk: error: --encryption-provider-config: ")
    assert err.count("\n") == 1 and str(bad) in err


def test_lint_of_inputs_without_a_crd_says_so_and_keeps_its_exit_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cm = tmp_path / "cm.yaml"
    cm.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    assert main(["lint", str(cm)]) == 0
    out, err = capsys.readouterr()
    assert "0 crds in 1 file(s)" in out
    assert err == f"kubewerk: note: no CustomResourceDefinition found in {cm}\n"
    crd = tmp_path / "crd.yaml"
    crd.write_text(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"
        "metadata: {name: things.example.com}\nspec:\n  group: example.com\n"
        "  names: {kind: Thing, plural: things}\n  scope: Namespaced\n  versions:\n"
        "  - name: v1\n    served: true\n    storage: true\n"
        "    schema: {openAPIV3Schema: {type: object}}\n"
    )
    main(["lint", str(crd)])
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(
    "argv",
    [["policy", "test", "--policy", "{bad}", "--resource", "{bad}"], ["gen", "policy", "{bad}"]],
)
def test_malformed_policy_yaml_is_one_line_with_its_line_number(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nmatch: [b\n")
    assert main([a.format(bad=bad) for a in argv]) == 2
    assert capsys.readouterr().err == (
        f"kubewerk: error: {bad}:3: invalid YAML: while parsing a flow sequence, "
        "did not find expected ',' or ']'\n"
    )


def test_webhook_certs_names_the_days_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["webhook", "certs", "--service", "s", "--namespace", "n", "--out", str(tmp_path)]
    assert main([*argv, "--days", "-1"]) == 2
    assert capsys.readouterr().err == "kubewerk: error: --days must be positive, not -1\n"
