"""kubewerk diff / kubewerk sync: output forms and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubewerk.apiserver.server import EmbeddedServer
from kubewerk.cli import main

from .conftest import widget, widget_crd, write_manifests


def test_diff_and_sync_round_trip(
    two: list[EmbeddedServer], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = (s.url for s in two)
    repo = tmp_path / "repo"
    write_manifests(repo / "crd.yaml", widget_crd())
    write_manifests(repo / "w.yaml", widget("w", size="m", memory="1Gi"))
    assert main(["diff", str(repo), a, "-o", "summary"]) == 1
    assert (
        capsys.readouterr().out.strip() == "0 added, 2 removed, 0 changed, 0 equal"
    )  # only in SRC
    assert main(["sync", "--from", str(repo), "--to", a, "--to", b, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "(dry run: nothing was written)" in out
    assert main(["diff", str(repo), a, "-o", "summary"]) == 1
    capsys.readouterr()
    assert main(["sync", "--from", str(repo), "--to", a, "--to", b, "-o", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [t["counts"] for t in doc["targets"]] == [{"created": 2}, {"created": 2}]
    assert main(["diff", str(repo), a]) == 0
    assert capsys.readouterr().out.strip().endswith("0 added, 0 removed, 0 changed, 2 equal")
    write_manifests(repo / "w.yaml", widget("w", size="l", memory="1024Mi"))
    assert main(["diff", str(repo), a, "--color", "never"]) == 1
    text = capsys.readouterr().out
    assert "~ Widget.sync.test default/w (changed)" in text
    # the patch goes from SRC (the manifests) to DST (the cluster)
    assert '- /spec/size: "l"' in text and '+ /spec/size: "m"' in text
    assert "memory" not in text  # 1Gi = 1024Mi
    assert main(["diff", str(repo), a, "--color", "always"]) == 1
    assert "\x1b[" in capsys.readouterr().out
    assert main(["diff", a, b, "-o", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["summary"]["changed"] == 0 and doc["summary"]["equal"] >= 2
    assert main(["sync", "--from", str(repo), "--to", a]) == 0
    capsys.readouterr()
    assert main(["diff", a, b, "-o", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    [changed] = [o for o in doc["objects"] if o["status"] == "changed"]
    assert changed["patch"] == [{"op": "replace", "path": "/spec/size", "value": "m"}]


def test_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff", str(tmp_path / "missing"), str(tmp_path)]) == 2
    assert "no such file or directory" in capsys.readouterr().err
    (tmp_path / "bad.yaml").write_text("a: [")
    assert main(["diff", str(tmp_path / "bad.yaml"), str(tmp_path / "bad.yaml")]) == 2
    assert "not YAML" in capsys.readouterr().err
    good = write_manifests(tmp_path / "good" / "w.yaml", widget("w"))
    assert main(["diff", str(good), "http://127.0.0.1:9"]) == 2
    assert "cannot reach the API server" in capsys.readouterr().err
    assert (
        main(
            ["sync", "--from", str(tmp_path), "--to", "a", "--to", "b", "--policy", "cluster-wins"]
        )
        == 2
    )
    assert "exactly one --to" in capsys.readouterr().err


def test_manifests_without_namespace_follow_the_context(
    two: list[EmbeddedServer], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The newcomer's walk through the command line: a custom resource manifest without
    a namespace, a kubeconfig context whose namespace is ``team``. diff (the context as
    the default side) and sync --dry-run agree with the cluster once the object is
    there; -n names the namespace instead, and refuses a manifest naming another."""
    from kubewerk.apiserver.server import kubeconfig_text

    url = two[0].url
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(kubeconfig_text(url, "kw", "team"))
    repo = tmp_path / "repo"
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}
    w = widget("w", size="m")
    del w["metadata"]["namespace"]
    write_manifests(repo / "crd.yaml", ns, widget_crd())
    write_manifests(repo / "w.yaml", w)
    kc = ["--kubeconfig", str(kubeconfig)]
    assert main(["sync", "--from", str(repo), "--to", "kw", *kc, "-o", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert "Widget.sync.test team/w" in [o["object"] for o in doc["targets"][0]["objects"]]
    assert main(["diff", str(repo), *kc, "--color", "never"]) == 0
    assert capsys.readouterr().out.strip() == "0 added, 0 removed, 0 changed, 3 equal"
    assert main(["sync", "--from", str(repo), "--to", "kw", *kc, "--dry-run"]) == 0
    assert capsys.readouterr().out.startswith("cluster:kw: ok (3 unchanged)")
    # -n default: the object is not in default, so there it is only in the manifests
    assert main(["diff", str(repo / "w.yaml"), url, "-n", "default", "-o", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert [(o["namespace"], o["status"]) for o in doc["objects"]] == [("default", "removed")]
    assert main(["diff", str(repo / "w.yaml"), url, "-n", "team", "-o", "summary"]) == 0
    capsys.readouterr()
    write_manifests(repo / "x.yaml", widget("x", "other"))
    assert main(["diff", str(repo), url, "-n", "team"]) == 2
    err = capsys.readouterr().err
    assert "x.yaml: Widget.sync.test other/x is in namespace 'other', not in 'team'" in err
