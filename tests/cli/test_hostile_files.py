"""``kubewerk lint|validate|compat|policy test`` on hostile inputs: endless devices, FIFOs
in a directory, binary and alias-bomb files, symlink loops. Each gets one
``kubewerk: error:`` line and exit 2 (or is skipped, for what a directory walk finds
that is not a regular file), in bounded time and memory; never a traceback or a hang."""

from __future__ import annotations

import contextlib
import os
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubewerk.cli import main
from kubewerk.core.inputs import DEFAULT_MAX_INPUT_BYTES

CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
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
                size: {type: integer}
"""
WIDGET = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\nspec: {size: 1}\n"
POLICY = """\
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: no-bad}
spec:
  matchConstraints:
    resourceRules:
      - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
  validations:
    - expression: "object.metadata.name != 'bad'"
"""
CONFIGMAP = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: good, namespace: default}\n"


def laughs() -> str:
    """A ConfigMap whose data expands to 9**9 strings through aliases (380 bytes)."""
    lines = ["apiVersion: v1", "kind: ConfigMap", "metadata: {name: lol}", "data:"]
    lines.append("  a0: &a0 [" + ", ".join(['"lol"'] * 9) + "]")
    for i in range(1, 9):
        lines.append(f"  a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
    return "\n".join(lines) + "\n"


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "crd.yaml").write_text(CRD)
    (tmp_path / "widget.yaml").write_text(WIDGET)
    (tmp_path / "policy.yaml").write_text(POLICY)
    (tmp_path / "cm.yaml").write_text(CONFIGMAP)
    (tmp_path / "binary.yaml").write_bytes(b"apiVersion: v1\nkind: \xff\xfe\x00\n")
    (tmp_path / "laughs.yaml").write_text(laughs())
    (tmp_path / "deep.yaml").write_text("a: " + "[" * 5000 + "]" * 5000 + "\n")
    return tmp_path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    """Exit code and stderr of one in-process run; fails on a traceback."""
    code = main(list(argv))
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    return code, err


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
@pytest.mark.parametrize(
    "command",
    ["lint", "validate", "compat", "policy-resource", "policy-policy", "policy-params"],
)
def test_an_endless_input_is_refused_after_the_input_limit(
    files: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    argv = {
        "lint": ["lint", "/dev/zero"],
        "validate": ["validate", "--crd", str(files / "crd.yaml"), "/dev/zero"],
        "compat": ["compat", str(files / "crd.yaml"), "/dev/zero"],
        "policy-resource": [
            "policy", "test", "--policy", str(files / "policy.yaml"), "--resource", "/dev/zero"
        ],
        "policy-policy": [
            "policy", "test", "--policy", "/dev/zero", "--resource", str(files / "cm.yaml")
        ],
        "policy-params": [
            "policy", "test", "--policy", str(files / "policy.yaml"),
            "--resource", str(files / "cm.yaml"), "--params", "/dev/zero",
        ],
    }[command]  # fmt: skip
    code, err = run(capsys, *argv)
    assert code == 2, err
    assert f"/dev/zero: larger than {DEFAULT_MAX_INPUT_BYTES} bytes" in err, err


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("binary.yaml", "binary.yaml:2: not UTF-8 text"),
        ("laughs.yaml", "excessive aliasing"),
        ("deep.yaml", "deep.yaml:1: invalid YAML"),
    ],
    ids=["binary", "alias-bomb", "deep"],
)
def test_policy_test_refuses_unreadable_files_with_one_line(
    files: Path, capsys: pytest.CaptureFixture[str], name: str, message: str
) -> None:
    started = time.monotonic()
    for argv in (
        ["--policy", str(files / "policy.yaml"), "--resource", str(files / name)],
        ["--policy", str(files / name), "--resource", str(files / "cm.yaml")],
    ):
        code, err = run(capsys, "policy", "test", *argv)
        assert code == 2, err
        lines = [line for line in err.splitlines() if not line.startswith("note: ")]
        assert len(lines) == 1 and lines[0].startswith("kubewerk: error: "), err
        assert message in lines[0], err
    assert time.monotonic() - started < 5


@pytest.fixture
def fifo_dir(files: Path) -> Iterator[Path]:
    """A directory holding a CRD and a FIFO named like a manifest; a helper opens the FIFO's
    write end after 3 s if something is blocked reading it (so a test never hangs)."""
    tree = files / "tree"
    tree.mkdir()
    (tree / "crd.yaml").write_text(CRD)
    fifo = tree / "pipe.yaml"
    os.mkfifo(fifo)
    done = threading.Event()

    def rescue() -> None:
        if done.wait(3):
            return
        with contextlib.suppress(OSError):  # nobody was reading it
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))

    helper = threading.Thread(target=rescue, daemon=True)
    helper.start()
    yield tree
    done.set()
    helper.join()


def test_a_fifo_found_in_a_directory_is_skipped(
    fifo_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert stat.S_ISFIFO(os.stat(fifo_dir / "pipe.yaml").st_mode)
    started = time.monotonic()
    code = main(["lint", "--fail-on", "never", str(fifo_dir)])
    assert time.monotonic() - started < 2, "lint waited for the FIFO"
    out = capsys.readouterr().out
    assert code == 0
    assert "1 crds in 1 file(s)" in out, out


def test_a_named_pipe_given_by_name_is_read(
    files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``kubewerk lint <(kustomize build)``: the shell passes /dev/fd/N, a pipe."""
    read_end, write_end = os.pipe()
    os.write(write_end, CRD.encode())
    os.close(write_end)
    try:
        code, err = run(capsys, "lint", "--fail-on", "never", f"/dev/fd/{read_end}")
    finally:
        os.close(read_end)
    assert code == 0, err


def test_a_symlink_loop_is_not_followed(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tree = files / "loop"
    tree.mkdir()
    (tree / "crd.yaml").write_text(CRD)
    (tree / "up").symlink_to("..")
    (tree / "self").symlink_to(".")
    code = main(["lint", "--fail-on", "never", str(tree)])
    out = capsys.readouterr().out
    assert code == 0
    assert "1 crds in 1 file(s)" in out, out


def test_diff_refuses_an_alias_bomb(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``kubewerk diff`` reads manifests with PyYAML, whose aliases are shared references
    that the comparison then walked 9**9 times; go-yaml's bound refuses the file first."""
    started = time.monotonic()
    code, err = run(capsys, "diff", str(files / "cm.yaml"), str(files / "laughs.yaml"))
    assert code == 2, err
    assert "laughs.yaml: not YAML: yaml: document contains excessive aliasing" in err, err
    assert time.monotonic() - started < 5
