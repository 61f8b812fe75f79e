"""``kubewerk validate --explain-cost``, ``cel-cost`` findings and the figure in
``unbounded-cel-input``."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from .helpers import run_cli

CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "x-kubernetes-validations": [
                                    {"rule": "self.l.all(a, a.all(b, b.size() > 1))"},
                                    {"rule": "self.name.startsWith('a')"},
                                ],
                                "properties": {
                                    "name": {"type": "string", "maxLength": 63},
                                    "l": {
                                        "type": "array",
                                        "items": {"type": "array", "items": {"type": "string"}},
                                    },
                                },
                            }
                        },
                    }
                },
            }
        ],
    },
}


def _write(tmp_path: Path, bounded: bool) -> Path:
    doc = json.loads(json.dumps(CRD))
    if bounded:
        lst = doc["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
        lst["properties"]["l"]["maxItems"] = 10
        lst["properties"]["l"]["items"]["maxItems"] = 10
    p = tmp_path / "crd.yaml"
    p.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return p


def test_explain_cost_json_and_exit_code(tmp_path: Path) -> None:
    code, out, _ = run_cli(
        ["validate", "--crd", str(_write(tmp_path, False)), "--explain-cost", "--format", "json"]
    )
    assert code == 1
    doc = json.loads(out)
    assert doc["perExpressionLimit"] == 10_000_000 and doc["perCRDLimit"] == 100_000_000
    first, second = doc["expressions"]
    assert first["overLimit"] is True and second["overLimit"] is False
    # self (1) + .name (1) + startsWith on 'a' (1)
    assert second["estimatedCost"] == 3
    assert second["shareOfCRDBudget"] == 3 / 100_000_000
    assert any("estimated rule cost exceeds budget" in m for m in doc["refusals"])


def test_explain_cost_text_bounded(tmp_path: Path) -> None:
    code, out, _ = run_cli(["validate", "--crd", str(_write(tmp_path, True)), "--explain-cost"])
    assert code == 0
    assert "self.name.startsWith('a')" in out
    assert "estimated cost 3 = 3 per call x 1" in out
    assert "OVER LIMIT" not in out


def test_validate_reports_cel_cost_and_lint_shows_the_figure(tmp_path: Path) -> None:
    crd = _write(tmp_path, False)
    obj = tmp_path / "w.yaml"
    obj.write_text(
        "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\nspec: {name: abc}\n",
        encoding="utf-8",
    )
    code, out, _ = run_cli(["validate", "--crd", str(crd), str(obj), "--format", "json"])
    assert code == 1
    rules = {f["rule"] for f in json.loads(out)["findings"]}
    assert "cel-cost" in rules
    code, out, _ = run_cli(["lint", str(crd)])
    line = next(x for x in out.splitlines() if "[unbounded-cel-input]" in x)
    assert "of the per-CRD budget" in line and "estimated cost" in line
