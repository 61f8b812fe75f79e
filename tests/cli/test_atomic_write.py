"""``kubewerk.cli.atomic_write``: an output file is whole or as it was, never half
written, and no temporary file is left behind."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from kubewerk.cli import main
from kubewerk.cli.atomic_write import write_atomic, write_if_changed

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
        openAPIV3Schema: {type: object}
"""


def test_a_failed_write_leaves_the_old_file_and_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "report.json"
    out.write_text("old\n")

    def fail(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("kubewerk.cli.atomic_write.os.replace", fail)
    with pytest.raises(OSError):
        write_atomic(out, "new\n" * 1000)
    assert out.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json"]


def test_lint_output_is_renamed_into_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``lint -o FILE`` writes through a temporary file: a failure at the rename keeps
    the previous report (before: the file was opened with "w", truncated first)."""
    (tmp_path / "crd.yaml").write_text(CRD)
    out = tmp_path / "report.json"
    out.write_text("previous report\n")

    def fail(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("kubewerk.cli.atomic_write.os.replace", fail)
    argv = ["lint", str(tmp_path / "crd.yaml"), "--format", "json", "-o", str(out)]
    assert main([*argv, "--fail-on", "never"]) == 2
    err = capsys.readouterr().err
    assert f"kubewerk: error: {out}: cannot write: No space left on device" in err
    assert out.read_text() == "previous report\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["crd.yaml", "report.json"]
    monkeypatch.undo()
    assert main([*argv, "--fail-on", "never"]) == 0
    assert out.read_text().startswith("{")


def test_a_new_file_gets_the_umask_mode_and_a_replaced_one_keeps_its_mode(
    tmp_path: Path,
) -> None:
    mask = os.umask(0o022)
    try:
        write_atomic(tmp_path / "new.txt", "x")
        assert stat.S_IMODE((tmp_path / "new.txt").stat().st_mode) == 0o644
        old = tmp_path / "old.txt"
        old.write_text("a")
        old.chmod(0o600)
        write_atomic(old, "b")
        assert old.read_text() == "b" and stat.S_IMODE(old.stat().st_mode) == 0o600
    finally:
        os.umask(mask)


def test_a_symbolic_link_is_followed_and_kept(tmp_path: Path) -> None:
    real = tmp_path / "real.txt"
    real.write_text("a")
    link = tmp_path / "link.txt"
    link.symlink_to(real)
    write_atomic(link, "b")
    assert link.is_symlink() and real.read_text() == "b"


def test_a_fifo_is_written_in_place_not_replaced(tmp_path: Path) -> None:
    """``-o /dev/stdout`` or a FIFO a reader waits on: renaming over it would replace the
    pipe by a file nobody reads."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    write_atomic(fifo, "through the pipe")
    reader.join(5)
    assert got == [b"through the pipe"]
    assert stat.S_ISFIFO(fifo.stat().st_mode)


def test_write_if_changed_leaves_an_unchanged_file_alone(tmp_path: Path) -> None:
    path = tmp_path / "crd.yaml"
    assert write_if_changed(path, "a: 1\n") is True
    before = path.stat().st_mtime_ns
    assert write_if_changed(path, "a: 1\n") is False
    assert path.stat().st_mtime_ns == before
    path.write_bytes(b"\xff\xfe not UTF-8")  # before: a UnicodeDecodeError traceback
    assert write_if_changed(path, "a: 1\n") is True
    assert path.read_text() == "a: 1\n"
